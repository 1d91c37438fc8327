//! The table of diagnostic codes.
//!
//! Every diagnostic spmdc emits carries one of these codes. Codes are grouped by the
//! stage that finds the problem; a code, once published, keeps its meaning. The long
//! explanation of each code lives in `explain/<CODE>.md` and is printed by
//! `spmdc explain <CODE>`; a test checks that every code has one and that the index in
//! `lang-spec/diagnostics.md` lists them all.
//!
//! | range  | stage |
//! |--------|-------|
//! | E00xx  | lexing and preprocessing |
//! | E01xx  | syntax |
//! | E02xx  | names and declarations |
//! | E03xx  | types |
//! | E04xx  | uniform/varying rules |
//! | E05xx  | control flow and entry points |
//! | E09xx  | command line and driver |
//! | Wxxxx  | warnings |

/// A diagnostic code such as `E0200`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Code(pub &'static str);

impl Code {
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// One row of the code table.
pub struct CodeInfo {
    pub code: Code,
    /// A one-line summary, used in the index of `lang-spec/diagnostics.md`.
    pub summary: &'static str,
    /// The long text printed by `spmdc explain`.
    pub explanation: &'static str,
}

macro_rules! codes {
    ($($name:ident = $code:literal : $summary:literal;)*) => {
        $(
            #[doc = $summary]
            pub const $name: Code = Code($code);
        )*
        /// Every code, in order.
        pub static ALL: &[CodeInfo] = &[
            $(CodeInfo {
                code: $name,
                summary: $summary,
                explanation: include_str!(concat!("explain/", $code, ".md")),
            },)*
        ];
    };
}

codes! {
    // ---- lexing and preprocessing
    UNKNOWN_CHARACTER = "E0001": "a character that cannot start any token";
    UNTERMINATED_COMMENT = "E0002": "a block comment that is never closed";
    UNTERMINATED_STRING = "E0003": "a string literal that is never closed";
    INVALID_CHAR_LITERAL = "E0004": "a malformed or unterminated character literal";
    INVALID_INT_LITERAL = "E0005": "an integer literal that is malformed or too large";
    INVALID_FLOAT_LITERAL = "E0006": "a malformed floating-point literal";
    INVALID_ESCAPE = "E0007": "an unknown escape sequence in a string or character literal";
    INCLUDE_NOT_FOUND = "E0008": "an `#include`d file that cannot be read";
    RECURSIVE_INCLUDE = "E0009": "a file that includes itself, directly or indirectly";
    MALFORMED_DIRECTIVE = "E0010": "a preprocessor directive with missing or malformed operands";
    UNKNOWN_DIRECTIVE = "E0011": "a preprocessor directive spmdc does not know";
    UNBALANCED_CONDITIONAL = "E0012": "`#else`/`#endif` without `#if`, or an `#if` never closed";
    ERROR_DIRECTIVE = "E0013": "an `#error` directive was reached";
    MACRO_EXPANSION_TOO_LARGE = "E0014": "a macro use that expands to too many tokens";
    BAD_MACRO_CALL = "E0015": "a function-like macro call with the wrong arguments, or a `##` that makes no token";

    // ---- syntax
    UNEXPECTED_TOKEN = "E0100": "a token the grammar does not allow here";
    UNEXPECTED_EOF = "E0101": "the file ends in the middle of a construct";
    UNCLOSED_DELIMITER = "E0102": "an opening `(`, `[` or `{` without its closing partner";
    MISSING_SEMICOLON = "E0103": "a statement or declaration that lacks its `;`";
    CONFLICTING_QUALIFIERS = "E0104": "contradictory qualifiers or type specifiers";
    INVALID_DECLARATOR = "E0105": "a declaration whose shape is not allowed";

    // ---- names and declarations
    UNDECLARED_NAME = "E0200": "use of a name that is not declared in scope";
    REDEFINITION = "E0201": "a name declared twice in the same scope";
    UNKNOWN_TYPE = "E0202": "a type name that is not declared";
    UNKNOWN_FUNCTION = "E0203": "a call to a function that does not exist";
    NO_MATCHING_OVERLOAD = "E0204": "no overload of a function accepts the arguments";
    AMBIGUOUS_OVERLOAD = "E0205": "several overloads match the arguments equally well";
    NO_SUCH_MEMBER = "E0206": "a struct has no member of that name";
    FUNCTION_REDEFINED = "E0207": "a function defined twice with the same parameter types";
    NOT_A_FUNCTION = "E0208": "calling something that is not a function";
    NOT_A_VALUE = "E0209": "a type or function used where a value is expected";
    PROTOTYPE_MISMATCH = "E0210": "a definition that disagrees with its prototype";
    UNDEFINED_FUNCTION = "E0211": "a function that is declared and called but never defined";
    INCOMPLETE_TYPE = "E0212": "a struct used by value before it is defined, or a recursive struct";
    UNKNOWN_TEMPLATE = "E0213": "template arguments given to a name that is not a function template";
    WRONG_TEMPLATE_ARG_COUNT = "E0214": "more template arguments than the template has parameters";
    CANNOT_DEDUCE_TEMPLATE_ARGS = "E0215": "template arguments that cannot be deduced from a call, or are missing";
    AMBIGUOUS_TEMPLATE = "E0216": "a specialization that matches several function templates";
    NO_TEMPLATE_TO_SPECIALIZE = "E0217": "a specialization or instantiation of no declared template, or a specialization after its use";
    TEMPLATE_INSTANTIATION_DEPTH = "E0218": "template instantiations nested too deeply, or too many of them";
    INVALID_OPERATOR_FUNCTION = "E0219": "an operator function with the wrong parameters for its operator, or `export` or `task`";

    // ---- types
    MISMATCHED_TYPES = "E0300": "a value whose type cannot be converted to the type required";
    INVALID_BINARY_OPERANDS = "E0301": "operand types a binary operator does not accept";
    INVALID_UNARY_OPERAND = "E0302": "an operand type a unary operator does not accept";
    NOT_ASSIGNABLE = "E0303": "assignment to something that is not an lvalue";
    ASSIGN_TO_CONST = "E0304": "assignment to a `const` object";
    WRONG_ARG_COUNT = "E0305": "a call with the wrong number of arguments";
    NOT_INDEXABLE = "E0306": "indexing a value that is neither an array nor a pointer";
    NOT_A_STRUCT = "E0307": "member access on a value that is not a struct";
    INVALID_CAST = "E0308": "a cast between types that cannot be converted";
    INVALID_ARRAY_SIZE = "E0309": "an array size that is not a positive integer constant";
    VOID_OBJECT = "E0310": "a variable, parameter or member of type `void`";
    NOT_A_CONDITION = "E0311": "a condition that cannot be converted to `bool`";
    RETURN_MISMATCH = "E0312": "a `return` that disagrees with the function's return type";
    DEREF_NON_POINTER = "E0313": "dereferencing a value that is not a pointer";
    ADDRESS_OF_RVALUE = "E0314": "taking the address of a value that has no address";
    NOT_CONSTANT = "E0315": "a constant expression is required";
    DUPLICATE_CASE = "E0316": "two `case` labels with the same value";
    TOO_MANY_INITIALIZERS = "E0317": "an initializer list with more elements than the object";
    INVALID_POINTER_ARITH = "E0318": "pointer arithmetic that is not defined";
    STRING_NOT_ALLOWED = "E0319": "a string literal outside a `print` format";
    NON_INTEGER = "E0320": "an index, switch value or shift count that is not an integer";
    WRONG_MEMBER_OPERATOR = "E0321": "`.` on a pointer or `->` on a non-pointer";
    INVALID_INITIALIZER = "E0322": "an initializer that does not fit the declared object";
    DIVISION_BY_ZERO = "E0323": "a constant division or remainder by zero";
    PRINT_FORMAT = "E0324": "a `print` format whose `%` placeholders disagree with its arguments";
    NESTED_TOO_DEEPLY = "E0325": "an expression or statement nested too deeply to check";
    INVALID_REFERENCE_BINDING = "E0326": "a reference bound to a value that is not an lvalue of its type";
    MISPLACED_REFERENCE = "E0327": "a reference where the language does not allow one";
    UNINITIALIZED_REFERENCE = "E0328": "a reference variable declared without the object it refers to";
    NO_FUNCTION_ADDRESS = "E0329": "the address of a function that no function pointer can hold";
    INVALID_VECTOR_TYPE = "E0332": "a short vector type whose element is not a basic type, or whose length is not a positive constant";
    INVALID_VECTOR_ELEMENT = "E0330": "a short vector element that does not exist: a bad swizzle letter, or an element past the end";
    VECTOR_LENGTH_MISMATCH = "E0331": "short vectors of different lengths in one operation or conversion";
    INVALID_TEMPLATE_ARGUMENT = "E0333": "a template argument that does not fit its parameter, or a non-type parameter of a type that cannot be one";
    NEW_OF_VOID = "E0338": "`new` of `void`, which has no size";
    DELETE_NOT_POINTER = "E0339": "`delete` of a value that is not a pointer";
    SOA_NOT_STRUCT = "E0334": "`soa<N>` applied to a type that is not a struct";
    INVALID_SOA_WIDTH = "E0335": "an `soa<N>` width that is not a constant power of two from 1 to 64";
    SOA_MEMBER_ADDRESS = "E0336": "the address of (or a reference to) part of an soa element, which is not contiguous in memory";
    SOA_CONVERSION = "E0337": "a conversion between a pointer to soa elements and another pointer type, or a use of an soa block that needs an element";

    // ---- uniform / varying
    VARYING_TO_UNIFORM = "E0400": "a varying value assigned to a uniform variable";
    VARYING_INDEX_IN_UNIFORM_CONTEXT = "E0401": "a varying index where a uniform value is required";
    EXPORT_VARYING_PARAM = "E0402": "a varying parameter on an `export` function";
    EXPORT_VARYING_RETURN = "E0403": "an `export` function returning a varying value";
    VARYING_RETURN_TO_UNIFORM = "E0404": "returning a varying value from a function with a uniform return type";
    CONFLICTING_VARIABILITY = "E0405": "`uniform` and `varying` on the same type";
    INVALID_SHARED = "E0406": "`shared` used where block-shared storage is not allowed";
    VARYING_ARG_TO_UNIFORM_PARAM = "E0407": "a varying argument passed to a uniform parameter";
    VARYING_WHERE_UNIFORM_REQUIRED = "E0408": "a varying value where the language requires a uniform one";
    VARYING_THROUGH_UNIFORM_POINTER = "E0409": "storing a varying value through a pointer to uniform data";
    VARYING_ARRAY_SIZE = "E0410": "an array size or launch parameter that is varying";
    REFERENCE_VARIABILITY = "E0411": "a reference bound to an object of the other variability or at a varying address";
    SOA_WITH_RATE = "E0412": "`uniform` or `varying` combined with `soa<N>` on one type";
    SOA_BOUND_MEMBER = "E0413": "`soa<N>` of a struct with a member whose variability is bound";

    // ---- control flow and entry points
    BREAK_OUTSIDE_LOOP = "E0500": "`break` outside a loop or `switch`";
    CONTINUE_OUTSIDE_LOOP = "E0501": "`continue` outside a loop";
    BREAK_IN_FOREACH = "E0502": "`break` inside a `foreach` loop";
    RETURN_IN_FOREACH = "E0503": "`return` inside a `foreach` loop";
    DUPLICATE_DEFAULT = "E0504": "two `default` labels in one `switch`";
    TASK_NOT_VOID = "E0505": "a `task` function with a non-`void` return type";
    BARRIER_IN_VARYING_CONTROL = "E0507": "`barrier()` under varying control flow";
    INVALID_ENTRY_QUALIFIERS = "E0508": "an `export`/`task` function with conflicting or misplaced qualifiers";
    NESTED_FOREACH = "E0509": "a `foreach` nested in a way the language does not allow";
    GOTO_IN_VARYING_CONTROL = "E0510": "`goto` under varying control flow";
    LABEL_NOT_AT_TOP = "E0511": "a label inside another statement (labels must be statements of the function body)";
    UNDEFINED_LABEL = "E0512": "`goto` to a label the function does not define";
    LAUNCH_NOT_TASK = "E0513": "`launch` of a function that is not a `task`";
    LAUNCH_COUNT_NOT_UNIFORM_INT = "E0514": "a `launch` task count that is not a uniform integer";
    LAUNCH_TOO_MANY_DIMS = "E0515": "a `launch` with more than three task counts";
    LAUNCH_NOT_CALL = "E0516": "`launch` of something that is not a function call";
    TASK_CALLED_WITHOUT_LAUNCH = "E0517": "a `task` function called without `launch`";

    // ---- command line and driver
    NO_SUCH_ENTRY = "E0900": "the entry point named on the command line does not exist";
    UNSUPPORTED_EMIT = "E0901": "an output or launch that the chosen target cannot produce or run";
    INPUT_UNREADABLE = "E0902": "the input file cannot be read";
    INTERNAL_ERROR = "E0999": "an internal compiler error: a bug in spmdc, not in the program";
    NOT_SUPPORTED_YET = "E0903": "a construct or standard library function that lowering to IR does not support yet";
    REGISTER_BUDGET = "E0904": "a `--max-regs` budget too small for some instruction's operands";
    BENCH_SUITE = "E0920": "a benchmark suite file that cannot be used (`spmdc bench FILE`)";

    // ---- warnings
    UNKNOWN_PRAGMA = "W0001": "a `#pragma` spmdc does not know, which is ignored";
    UNUSED_VARIABLE = "W0002": "a local variable that is never read";
    UNNECESSARY_COHERENT_HINT = "W0003": "`cif`/`cfor`/`cwhile`/`cdo` on a condition that is always uniform";
    UNIFORM_STORE_UNDER_VARYING_CONTROL = "W0004": "a store to a uniform variable under varying control flow";
    IMPLICIT_NARROWING = "W0005": "an implicit conversion that may lose precision or range";
    MACRO_REDEFINED = "W0006": "a `#define` that replaces an earlier definition";
    UNREACHABLE_CODE = "W0007": "a statement that can never execute";
    DIVERGENT_BRANCH = "W0008": "a branch the program instances may take differently (`--warn-divergent`)";
    FLOAT_WITHOUT_RADIX = "W0009": "a float literal written without a radix separator (`2f`)";
    INEFFECTIVE_OPTION = "W0010": "a command-line option that changes nothing in the combination given";
    WRONG_BY_DESIGN = "W0011": "a switch whose results are wrong by design (an ablation)";
    MISSING_RETURN_VALUE = "W0012": "a non-`void` function whose end is reachable without `return` (it then returns zero)";
    OVERLOAD_BY_TOTAL_COST = "W0013": "an overloaded call decided by the least total conversion cost, though another overload converts some argument more cheaply";
}

/// Looks a code up by its text, case-insensitively (`e0200` works too).
pub fn lookup(text: &str) -> Option<&'static CodeInfo> {
    ALL.iter()
        .find(|c| c.code.0.eq_ignore_ascii_case(text.trim()))
}
