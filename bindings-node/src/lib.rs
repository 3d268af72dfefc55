//! zklock's node face (placeholder until the binding lands).
