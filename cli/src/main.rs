fn main() {
    eprintln!("zklock: not built yet");
    std::process::exit(2);
}
