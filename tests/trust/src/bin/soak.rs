fn main() {
    eprintln!("soak: not written yet");
    std::process::exit(2);
}
