//! Per-language knowledge for RAG-lite: which files a language owns, its keywords, how a
//! definition line looks, and where a definition's block ends.

use regex::Regex;
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// A language whose definitions RAG-lite can find. TypeScript is read as JavaScript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Language {
    Rust,
    Python,
    JavaScript,
    Go,
}

impl Language {
    /// The language of a repository path, by extension.
    pub fn from_path(path: &str) -> Option<Self> {
        let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
        match ext.as_str() {
            "rs" => Some(Self::Rust),
            "py" | "pyi" => Some(Self::Python),
            "js" | "mjs" | "cjs" | "jsx" | "ts" | "tsx" | "mts" | "cts" => Some(Self::JavaScript),
            "go" => Some(Self::Go),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rust => "rust",
            Self::Python => "python",
            Self::JavaScript => "javascript",
            Self::Go => "go",
        }
    }

    /// `git grep` pathspecs selecting this language's files.
    pub fn pathspecs(self) -> &'static [&'static str] {
        match self {
            Self::Rust => &["*.rs"],
            Self::Python => &["*.py", "*.pyi"],
            Self::JavaScript => &["*.js", "*.mjs", "*.cjs", "*.jsx", "*.ts", "*.tsx", "*.mts", "*.cts"],
            Self::Go => &["*.go"],
        }
    }

    fn keywords(self) -> &'static [&'static str] {
        match self {
            Self::Rust => &[
                "as",
                "async",
                "await",
                "break",
                "const",
                "continue",
                "crate",
                "dyn",
                "else",
                "enum",
                "extern",
                "false",
                "fn",
                "for",
                "if",
                "impl",
                "in",
                "let",
                "loop",
                "match",
                "mod",
                "move",
                "mut",
                "pub",
                "ref",
                "return",
                "self",
                "Self",
                "static",
                "struct",
                "super",
                "trait",
                "true",
                "type",
                "unsafe",
                "use",
                "where",
                "while",
                "Some",
                "None",
                "Ok",
                "Err",
                "Option",
                "Result",
                "Vec",
                "String",
                "Box",
                "str",
                "bool",
                "char",
                "u8",
                "u16",
                "u32",
                "u64",
                "u128",
                "usize",
                "i8",
                "i16",
                "i32",
                "i64",
                "i128",
                "isize",
                "f32",
                "f64",
                "println",
                "format",
                "assert",
                "assert_eq",
                "vec",
            ],
            Self::Python => &[
                "False",
                "None",
                "True",
                "and",
                "as",
                "assert",
                "async",
                "await",
                "break",
                "class",
                "continue",
                "def",
                "del",
                "elif",
                "else",
                "except",
                "finally",
                "for",
                "from",
                "global",
                "if",
                "import",
                "in",
                "is",
                "lambda",
                "nonlocal",
                "not",
                "or",
                "pass",
                "raise",
                "return",
                "try",
                "while",
                "with",
                "yield",
                "self",
                "cls",
                "int",
                "str",
                "float",
                "bool",
                "list",
                "dict",
                "set",
                "tuple",
                "len",
                "range",
                "print",
                "isinstance",
                "super",
                "object",
                "Exception",
                "ValueError",
                "TypeError",
                "KeyError",
            ],
            Self::JavaScript => &[
                "async",
                "await",
                "break",
                "case",
                "catch",
                "class",
                "const",
                "continue",
                "debugger",
                "default",
                "delete",
                "do",
                "else",
                "export",
                "extends",
                "false",
                "finally",
                "for",
                "from",
                "function",
                "if",
                "import",
                "in",
                "instanceof",
                "let",
                "new",
                "null",
                "of",
                "return",
                "static",
                "super",
                "switch",
                "this",
                "throw",
                "true",
                "try",
                "typeof",
                "undefined",
                "var",
                "void",
                "while",
                "with",
                "yield",
                "interface",
                "type",
                "enum",
                "implements",
                "readonly",
                "public",
                "private",
                "protected",
                "abstract",
                "as",
                "number",
                "string",
                "boolean",
                "any",
                "unknown",
                "never",
                "Number",
                "String",
                "Boolean",
                "Object",
                "Array",
                "Math",
                "JSON",
                "Promise",
                "Error",
                "console",
                "Map",
                "Set",
            ],
            Self::Go => &[
                "break",
                "case",
                "chan",
                "const",
                "continue",
                "default",
                "defer",
                "else",
                "fallthrough",
                "for",
                "func",
                "go",
                "goto",
                "if",
                "import",
                "interface",
                "map",
                "package",
                "range",
                "return",
                "select",
                "struct",
                "switch",
                "type",
                "var",
                "nil",
                "true",
                "false",
                "err",
                "error",
                "string",
                "int",
                "int8",
                "int16",
                "int32",
                "int64",
                "uint",
                "uint8",
                "uint16",
                "uint32",
                "uint64",
                "float32",
                "float64",
                "bool",
                "byte",
                "rune",
                "len",
                "cap",
                "make",
                "new",
                "append",
                "panic",
                "recover",
                "fmt",
            ],
        }
    }

    fn definition_patterns(self) -> &'static [(Regex, &'static str)] {
        static RUST: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
        static PYTHON: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
        static JS: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
        static GO: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
        let compile = |specs: &[(&str, &'static str)]| -> Vec<(Regex, &'static str)> {
            specs.iter().filter_map(|(p, kind)| Regex::new(p).ok().map(|r| (r, *kind))).collect()
        };
        match self {
            Self::Rust => RUST.get_or_init(|| {
                compile(&[
                    (r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:const|async|unsafe|extern(?:\s+\x22[^\x22]*\x22)?)\s+)*fn\s+([A-Za-z_][A-Za-z0-9_]*)", "function"),
                    (r"^\s*(?:pub(?:\([^)]*\))?\s+)?(struct|enum|trait|union|type)\s+([A-Za-z_][A-Za-z0-9_]*)", "type"),
                    (r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const|static(?:\s+mut)?)\s+([A-Za-z_][A-Za-z0-9_]*)\s*:", "constant"),
                    (r"^\s*macro_rules!\s*([A-Za-z_][A-Za-z0-9_]*)", "macro"),
                ])
            }),
            Self::Python => PYTHON.get_or_init(|| {
                compile(&[
                    (r"^\s*(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(", "function"),
                    (r"^\s*class\s+([A-Za-z_][A-Za-z0-9_]*)\s*[:(]", "class"),
                    (r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]+)?=[^=]", "variable"),
                ])
            }),
            Self::JavaScript => JS.get_or_init(|| {
                compile(&[
                    (r"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][A-Za-z0-9_$]*)\s*[<(]", "function"),
                    (r"^\s*(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+([A-Za-z_$][A-Za-z0-9_$]*)", "class"),
                    (r"^\s*(?:export\s+)?(?:declare\s+)?(?:interface|enum)\s+([A-Za-z_$][A-Za-z0-9_$]*)", "type"),
                    (r"^\s*(?:export\s+)?(?:declare\s+)?type\s+([A-Za-z_$][A-Za-z0-9_$]*)\s*(?:<[^=]*>)?\s*=", "type"),
                    (r"^(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][A-Za-z0-9_$]*)\s*(?::[^=]+)?=", "variable"),
                    (r"^\s+(?:static\s+|async\s+|get\s+|set\s+|public\s+|private\s+|protected\s+)*([A-Za-z_$][A-Za-z0-9_$]*)\s*\([^)]*\)\s*(?::[^{]+)?\{\s*$", "method"),
                ])
            }),
            Self::Go => GO.get_or_init(|| {
                compile(&[
                    (r"^func\s+\([^)]*\)\s*([A-Za-z_][A-Za-z0-9_]*)\s*[\[(]", "method"),
                    (r"^func\s+([A-Za-z_][A-Za-z0-9_]*)\s*[\[(]", "function"),
                    (r"^\s*type\s+([A-Za-z_][A-Za-z0-9_]*)\s", "type"),
                    (r"^(?:const|var)\s+([A-Za-z_][A-Za-z0-9_]*)\s", "variable"),
                ])
            }),
        }
    }

    /// Names a line defines, with their kind (`function`, `type`, `class`, …).
    pub fn definitions_on(self, line: &str) -> Vec<(String, &'static str)> {
        let mut out = Vec::new();
        for (re, kind) in self.definition_patterns() {
            if let Some(caps) = re.captures(line) {
                // The name is the last capture group (Rust's type pattern also captures the keyword).
                if let Some(name) = caps.iter().skip(1).flatten().last() {
                    if self.keywords().contains(&name.as_str()) {
                        continue;
                    }
                    let kind = if self == Self::Rust && *kind == "type" {
                        match caps.get(1).map(|m| m.as_str()) {
                            Some("trait") => "trait",
                            Some("enum") => "enum",
                            _ => "type",
                        }
                    } else if *kind == "function" && matches!(self, Self::Rust | Self::Python) && line.starts_with(char::is_whitespace) {
                        // Indented: inside an `impl`, a trait or a class.
                        "method"
                    } else {
                        kind
                    };
                    if !out.iter().any(|(n, _): &(String, &str)| n == name.as_str()) {
                        out.push((name.as_str().to_string(), kind));
                    }
                }
            }
        }
        out
    }

    /// The index (into `lines`) of the last line of the definition that starts at `start`,
    /// looking at no more than `max_lines` lines.
    pub fn block_end(self, lines: &[&str], start: usize, max_lines: usize) -> usize {
        let last = (start + max_lines.max(1) - 1).min(lines.len().saturating_sub(1));
        match self {
            Self::Python => python_block_end(lines, start, last),
            // Rust uses `'` for lifetimes, so only double quotes open a string there.
            Self::Rust => brace_block_end(lines, start, last, &['"']),
            _ => brace_block_end(lines, start, last, &['"', '\'', '`']),
        }
    }

    /// Identifiers used in code, in order of first use, without keywords and common builtins.
    #[cfg(test)]
    pub(crate) fn identifiers(self, code: &str) -> Vec<String> {
        self.usages(code).into_iter().map(|(name, _)| name).collect()
    }

    /// Identifiers used in code with how they are used, in order of first use.
    pub fn usages(self, code: &str) -> Vec<(String, Usage)> {
        static IDENT: OnceLock<Option<Regex>> = OnceLock::new();
        let Some(re) = IDENT.get_or_init(|| Regex::new(r"[A-Za-z_$][A-Za-z0-9_$]*").ok()) else { return Vec::new() };
        let keywords: BTreeSet<&str> = self.keywords().iter().copied().collect();
        let mut out: Vec<(String, Usage)> = Vec::new();
        for line in code.lines() {
            let line = strip_line_comment(self, line);
            let bytes = line.as_bytes();
            for m in re.find_iter(line) {
                // Skip a name glued to a preceding digit or quote-free number like `1e5`.
                if m.start() > 0 && bytes[m.start() - 1].is_ascii_digit() {
                    continue;
                }
                let name = m.as_str();
                if name.len() < 2 || name.starts_with('$') || keywords.contains(name) {
                    continue;
                }
                let before = line[..m.start()].trim_end();
                // A name being defined or bound here is not a use.
                let defining =
                    ["fn", "def", "function", "func", "class", "struct", "enum", "trait", "type", "interface", "let", "var", "const", "static", "mod"]
                        .iter()
                        .any(|k| before.strip_suffix(k).is_some_and(|rest| rest.is_empty() || rest.ends_with(|c: char| !c.is_alphanumeric() && c != '_')))
                        || (before.ends_with("mut") && before[..before.len() - 3].trim_end().ends_with("let"));
                if defining {
                    continue;
                }
                let after = line[m.end()..].trim_start();
                let called =
                    after.starts_with('(') || after.starts_with("!(") || after.starts_with("![") || after.starts_with("!{") || after.starts_with("::<");
                let method = m.start() > 0 && bytes[m.start() - 1] == b'.';
                let path = before.ends_with("::");
                let usage = Usage { call: called && !method && !path, path_call: called && path, method_call: called && method, other: !called };
                match out.iter_mut().find(|(n, _)| n == name) {
                    Some((_, u)) => u.merge(usage),
                    None => out.push((name.to_string(), usage)),
                }
            }
        }
        out
    }
}

/// How an identifier is used in the reviewed code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Called as a free function: `f(`, `m!(`.
    pub call: bool,
    /// Called through a path: `Type::f(`, `module::f(`.
    pub path_call: bool,
    /// Called as a method: `x.f(` (the receiver's type is unknown here).
    pub method_call: bool,
    /// Used otherwise: a type, a constant, a value.
    pub other: bool,
}

impl Usage {
    /// Adds the uses in `other`.
    pub fn merge_from(&mut self, other: Usage) {
        self.merge(other);
    }

    fn merge(&mut self, other: Usage) {
        self.call |= other.call;
        self.path_call |= other.path_call;
        self.method_call |= other.method_call;
        self.other |= other.other;
    }

    /// Whether a definition of `kind` fits this use, for a definition outside the reviewed
    /// files: functions must be called (a local variable of the same name is not the
    /// function); types, classes and constants fit any use. A call through `.` is a method
    /// call in Rust, whose receiver's type is unknown here, so it is not guessed; in Go,
    /// Python and JavaScript `x.f(` is also how a package's or module's function is called,
    /// so it fits when the name is defined in one file only (`unique`).
    pub fn fits(&self, kind: &str, lang: Language, unique: bool) -> bool {
        let dotted = self.method_call && lang != Language::Rust && unique;
        match kind {
            "function" => self.call || self.path_call || dotted,
            "macro" => self.call,
            // An associated function (`Type::new(`) or a method of a module's object.
            "method" => self.path_call || dotted,
            _ => self.call || self.path_call || self.other,
        }
    }
}

fn strip_line_comment(lang: Language, line: &str) -> &str {
    let marker = match lang {
        Language::Python => "#",
        _ => "//",
    };
    match line.find(marker) {
        Some(i) => &line[..i],
        None => line,
    }
}

fn indent_of(line: &str) -> usize {
    line.chars().take_while(|c| c.is_whitespace()).map(|c| if c == '\t' { 4 } else { 1 }).sum()
}

fn python_block_end(lines: &[&str], start: usize, last: usize) -> usize {
    let Some(first) = lines.get(start) else { return start };
    let base = indent_of(first);
    // A multi-line signature or assignment continues while brackets are open.
    let mut depth: i32 = 0;
    let mut end = start;
    let mut i = start;
    while i <= last {
        let line = lines[i];
        if i > start && depth <= 0 && !line.trim().is_empty() && indent_of(line) <= base {
            break;
        }
        for c in line.chars() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                _ => {}
            }
        }
        if !line.trim().is_empty() {
            end = i;
        }
        // A one-line definition (`X = 1`) with no block after it.
        if i == start && depth <= 0 && !line.trim_end().ends_with(':') && !line.trim_end().ends_with('\\') {
            return start;
        }
        i += 1;
    }
    end
}

fn brace_block_end(lines: &[&str], start: usize, last: usize, quotes: &[char]) -> usize {
    let mut depth: i32 = 0;
    let mut opened = false;
    for (i, line) in lines.iter().enumerate().take(last + 1).skip(start) {
        let mut in_str: Option<char> = None;
        let mut prev = '\0';
        for c in line.chars() {
            match in_str {
                Some(q) => {
                    if c == q && prev != '\\' {
                        in_str = None;
                    }
                }
                None => match c {
                    q if quotes.contains(&q) => in_str = Some(q),
                    '{' | '(' => {
                        depth += 1;
                        if c == '{' {
                            opened = true;
                        }
                    }
                    '}' | ')' => depth -= 1,
                    _ => {}
                },
            }
            prev = c;
        }
        let trimmed = line.trim_end();
        if depth <= 0 && (opened || trimmed.ends_with(';') || i == start && !trimmed.ends_with(['(', ',', '=', '{'])) {
            return i;
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs(lang: Language, line: &str) -> Vec<(String, &'static str)> {
        lang.definitions_on(line)
    }

    #[test]
    fn languages_come_from_extensions() {
        assert_eq!(Language::from_path("src/a.rs"), Some(Language::Rust));
        assert_eq!(Language::from_path("x/y.py"), Some(Language::Python));
        assert_eq!(Language::from_path("src/limits.mjs"), Some(Language::JavaScript));
        assert_eq!(Language::from_path("web/app.tsx"), Some(Language::JavaScript));
        assert_eq!(Language::from_path("main.go"), Some(Language::Go));
        assert_eq!(Language::from_path("README.md"), None);
        assert_eq!(Language::from_path("Makefile"), None);
    }

    #[test]
    fn rust_definitions() {
        assert_eq!(defs(Language::Rust, "pub fn parse(text: &str) -> u32 {"), vec![("parse".into(), "function")]);
        assert_eq!(defs(Language::Rust, "    pub(crate) async fn run(&self) {"), vec![("run".into(), "method")]);
        assert_eq!(defs(Language::Rust, "pub const unsafe fn raw() {}"), vec![("raw".into(), "function")]);
        assert_eq!(defs(Language::Rust, "pub struct Limits {"), vec![("Limits".into(), "type")]);
        assert_eq!(defs(Language::Rust, "enum Mode { A, B }"), vec![("Mode".into(), "enum")]);
        assert_eq!(defs(Language::Rust, "pub trait Reviewer: Send {"), vec![("Reviewer".into(), "trait")]);
        assert_eq!(defs(Language::Rust, "pub const MAX_LIMIT: u32 = 100;"), vec![("MAX_LIMIT".into(), "constant")]);
        assert_eq!(defs(Language::Rust, "macro_rules! check {"), vec![("check".into(), "macro")]);
        assert!(defs(Language::Rust, "    let x = parse(y);").is_empty());
    }

    #[test]
    fn python_definitions() {
        assert_eq!(defs(Language::Python, "def avg(xs):"), vec![("avg".into(), "function")]);
        assert_eq!(defs(Language::Python, "    async def fetch(self, url):"), vec![("fetch".into(), "method")]);
        assert_eq!(defs(Language::Python, "class Window(Base):"), vec![("Window".into(), "class")]);
        assert_eq!(defs(Language::Python, "MAX_RETRIES = 3"), vec![("MAX_RETRIES".into(), "variable")]);
        assert!(defs(Language::Python, "    total = 0").is_empty(), "indented assignments are locals");
        assert!(defs(Language::Python, "if a == b:").is_empty());
    }

    #[test]
    fn javascript_and_typescript_definitions() {
        assert_eq!(defs(Language::JavaScript, "export function normalizeLimit(value) {"), vec![("normalizeLimit".into(), "function")]);
        assert_eq!(defs(Language::JavaScript, "async function* walk(dir) {"), vec![("walk".into(), "function")]);
        assert_eq!(defs(Language::JavaScript, "export default class Cache extends Base {"), vec![("Cache".into(), "class")]);
        assert_eq!(defs(Language::JavaScript, "export const DEFAULT_LIMIT = 20;"), vec![("DEFAULT_LIMIT".into(), "variable")]);
        assert_eq!(defs(Language::JavaScript, "export interface Page {"), vec![("Page".into(), "type")]);
        assert_eq!(defs(Language::JavaScript, "type Id<T> = string;"), vec![("Id".into(), "type")]);
        assert_eq!(defs(Language::JavaScript, "  get(key) {"), vec![("get".into(), "method")]);
        assert!(defs(Language::JavaScript, "  if (x) {").is_empty(), "control flow is not a method");
        assert!(defs(Language::JavaScript, "  return normalizeLimit(x);").is_empty());
    }

    #[test]
    fn go_definitions() {
        assert_eq!(defs(Language::Go, "func Parse(s string) (int, error) {"), vec![("Parse".into(), "function")]);
        assert_eq!(defs(Language::Go, "func (c *Client) Do(req *Request) error {"), vec![("Do".into(), "method")]);
        assert_eq!(defs(Language::Go, "func Map[T any](xs []T) []T {"), vec![("Map".into(), "function")]);
        assert_eq!(defs(Language::Go, "type Client struct {"), vec![("Client".into(), "type")]);
        assert_eq!(defs(Language::Go, "const MaxLimit = 100"), vec![("MaxLimit".into(), "variable")]);
        assert!(defs(Language::Go, "\tx := Parse(s)").is_empty());
    }

    #[test]
    fn brace_blocks_end_where_braces_balance() {
        let src = ["export function f(a) {", "  if (a) {", "    return '}';", "  }", "  return 1;", "}", "const x = 1;"];
        assert_eq!(Language::JavaScript.block_end(&src, 0, 50), 5);
        assert_eq!(Language::JavaScript.block_end(&src, 6, 50), 6);
        assert_eq!(Language::JavaScript.block_end(&src, 0, 3), 2, "capped at max_lines");
        let rust = ["pub const MAX: u32 = 5;", "pub struct A {", "    x: u32,", "}"];
        assert_eq!(Language::Rust.block_end(&rust, 0, 50), 0);
        assert_eq!(Language::Rust.block_end(&rust, 1, 50), 3);
        let go = ["type ID int", "func F(", "\ta int,", ") int {", "\treturn a", "}"];
        assert_eq!(Language::Go.block_end(&go, 0, 50), 0);
        assert_eq!(Language::Go.block_end(&go, 1, 50), 5);
    }

    #[test]
    fn python_blocks_end_at_dedent() {
        let src = ["def avg(xs):", "    total = sum(xs)", "", "    return total / len(xs)", "", "", "LIMIT = 3", "class A:", "    pass"];
        assert_eq!(Language::Python.block_end(&src, 0, 50), 3);
        assert_eq!(Language::Python.block_end(&src, 6, 50), 6);
        assert_eq!(Language::Python.block_end(&src, 7, 50), 8);
        let sig = ["def f(", "    a,", "):", "    return a", "x = 1"];
        assert_eq!(Language::Python.block_end(&sig, 0, 50), 3);
    }

    #[test]
    fn identifiers_skip_keywords_comments_and_repeats() {
        let ids = Language::JavaScript.identifiers("  const size = typeof limit === 'string' ? parseLimit(limit) : normalizeLimit(limit); // pageWindow");
        assert_eq!(ids, vec!["limit", "parseLimit", "normalizeLimit"], "`size` is being defined, not used");
        let py = Language::Python.identifiers("    return sum(xs) / len(xs)  # avg of xs");
        assert_eq!(py, vec!["sum", "xs"]);
        let rs = Language::Rust.identifiers("let n: u32 = parse_limit(&raw)?; 1e5");
        assert_eq!(rs, vec!["parse_limit", "raw"]);
    }

    #[test]
    fn usages_tell_calls_from_method_calls_and_values() {
        let u: std::collections::BTreeMap<String, Usage> = Language::Rust
            .usages("let reviewer = Reviewer::new(spec); reviewer.push(x); check!(y); let t: Limits = clamp (z); fn helper(a: u8) {} drop(reviewer);")
            .into_iter()
            .collect();
        let none = Usage::default();
        assert_eq!(u["reviewer"], Usage { other: true, ..none }, "bound by `let`, then used as a value");
        assert_eq!(u["Reviewer"], Usage { other: true, ..none });
        assert_eq!(u["new"], Usage { path_call: true, ..none });
        assert_eq!(u["push"], Usage { method_call: true, ..none });
        assert_eq!(u["check"], Usage { call: true, ..none });
        assert_eq!(u["clamp"], Usage { call: true, ..none });
        assert!(!u.contains_key("helper") && !u.contains_key("t"), "names defined here are not uses");
        let rust = Language::Rust;
        assert!(u["Limits"].fits("type", rust, false));
        assert!(!u["reviewer"].fits("function", rust, true), "a local is not the function");
        assert!(!u["push"].fits("method", rust, true), "a Rust method call is not guessed");
        assert!(u["new"].fits("method", rust, false), "`Reviewer::new(` fits an associated fn");
        assert!(!u["drop"].fits("method", rust, true), "a free call is not a method");
        let go: std::collections::BTreeMap<String, Usage> = Language::Go.usages("err := api.Parse(s)").into_iter().collect();
        assert!(go["Parse"].fits("function", Language::Go, true), "a package's function");
        assert!(!go["Parse"].fits("function", Language::Go, false), "but not when several files define it");
    }
}
