//! zklock's python face (placeholder until the binding lands).
