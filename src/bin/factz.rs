fn main() {
    eprintln!("factz: command line not built yet");
    std::process::exit(2);
}
