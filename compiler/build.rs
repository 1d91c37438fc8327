fn main() {
    // Generates OUT_DIR/front/grammar.rs from src/front/grammar.lalrpop.
    lalrpop::process_src().expect("lalrpop grammar failed to build");
}
