fn main() {
    std::process::exit(wait_for_idp::main());
}
