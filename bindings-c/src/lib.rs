//! zklock's c face (placeholder until the binding lands).
