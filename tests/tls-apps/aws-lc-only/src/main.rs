include!("../../app.rs");
