//! One filetest: the file's text, its header (the `; test` and `; set` lines of its
//! leading comment block) and, on demand, its kernels and launch.
//!
//! The header is read from comment lines only, so every filetest stays a valid `.wir`
//! file that the parser, the CLI and the other tools read as they read any kernel.

use crate::Failure;
use std::fmt;
use std::path::{Path, PathBuf};
use warplift_ir::launch::{Launch, PreparedLaunch};
use warplift_ir::parser::parse_functions;
use warplift_ir::Function;

/// What a `; test KIND` line asks for (see the crate documentation for each).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TestKind {
    /// `test interpret`: the reference interpreter reaches the launch's `[expect]` values.
    Interpret,
    /// `test run`: the emulator after a pipeline equals the reference interpreter.
    Run,
    /// `test compile`: the compiled code equals the expected output.
    Compile,
    /// `test divergence`: the divergence analysis equals the expected output.
    Divergence,
    /// `test verify`: the verifier accepts the file, or rejects it with the expected errors.
    Verify,
    /// `test parse-error`: the parser rejects the file with the expected error.
    ParseError,
}

impl TestKind {
    /// Every kind, in the order the documentation lists them.
    pub const ALL: [TestKind; 6] = [
        TestKind::Interpret,
        TestKind::Run,
        TestKind::Compile,
        TestKind::Divergence,
        TestKind::Verify,
        TestKind::ParseError,
    ];

    /// The kind's name in a header line.
    pub fn name(self) -> &'static str {
        match self {
            TestKind::Interpret => "interpret",
            TestKind::Run => "run",
            TestKind::Compile => "compile",
            TestKind::Divergence => "divergence",
            TestKind::Verify => "verify",
            TestKind::ParseError => "parse-error",
        }
    }

    fn from_name(name: &str) -> Option<TestKind> {
        TestKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl fmt::Display for TestKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One `; test KIND word...` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    /// The kind of test.
    pub kind: TestKind,
    /// The `name=value` words after the kind, in order.
    pub options: Vec<(String, String)>,
    /// The 1-based line of the file.
    pub line: usize,
}

impl Command {
    /// The value of option `name`, if given.
    pub fn option(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The header of a filetest: its commands and file-wide settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// The `; test` lines, in order.
    pub commands: Vec<Command>,
    /// The `; set name=value` lines, in order, with their lines.
    pub settings: Vec<(String, String, usize)>,
    /// The `; error: TEXT` lines of the header, with their lines.
    pub errors: Vec<(String, usize)>,
}

impl Header {
    /// Reads the header from the file's leading comment block: every line up to the first
    /// line that is neither blank nor a comment. A comment that starts with `test ` or
    /// `set ` must be a well-formed command; any other comment is documentation.
    pub fn parse(text: &str) -> Result<Header, Failure> {
        let mut header = Header::default();
        for (i, line) in text.lines().enumerate() {
            let line_no = i + 1;
            let trimmed = line.trim();
            if trimmed.is_empty() {
                continue;
            }
            let Some(comment) = trimmed.strip_prefix(';') else {
                break;
            };
            let comment = comment.trim();
            if let Some(rest) = comment.strip_prefix("test ") {
                let mut words = rest.split_whitespace();
                let kind_name = words.next().unwrap_or("");
                let kind = TestKind::from_name(kind_name).ok_or_else(|| {
                    Failure::at(
                        line_no,
                        format!(
                            "unknown test kind `{kind_name}` (known: {})",
                            TestKind::ALL.map(TestKind::name).join(", ")
                        ),
                    )
                })?;
                let options = words
                    .map(|w| assignment(w, line_no))
                    .collect::<Result<Vec<_>, _>>()?;
                header.commands.push(Command {
                    kind,
                    options,
                    line: line_no,
                });
            } else if let Some(rest) = comment.strip_prefix("set ") {
                for w in rest.split_whitespace() {
                    let (name, value) = assignment(w, line_no)?;
                    header.settings.push((name, value, line_no));
                }
            } else if let Some(rest) = comment.strip_prefix("error:") {
                header.errors.push((rest.trim().to_string(), line_no));
            }
        }
        Ok(header)
    }
}

fn assignment(word: &str, line: usize) -> Result<(String, String), Failure> {
    match word.split_once('=') {
        Some((n, v)) if !n.is_empty() && !v.is_empty() => Ok((n.to_string(), v.to_string())),
        _ => Err(Failure::at(
            line,
            format!("`{word}` is not a `name=value` option"),
        )),
    }
}

/// One `.wir` file, read, with its header.
#[derive(Clone, Debug)]
pub struct TestFile {
    /// The file.
    pub path: PathBuf,
    /// The file's name (`saxpy.wir`), as failures name it.
    pub name: String,
    /// The file's text.
    pub text: String,
    /// The file's header (empty for a kernel without one).
    pub header: Header,
}

impl TestFile {
    /// Reads `path` and its header.
    pub fn load(path: &Path) -> Result<TestFile, Failure> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::new(format!("cannot read the file: {e}")))?;
        let header = Header::parse(&text)?;
        Ok(TestFile {
            path: path.to_path_buf(),
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            text,
            header,
        })
    }

    /// The file's name without `.wir`.
    pub fn stem(&self) -> &str {
        self.name.strip_suffix(".wir").unwrap_or(&self.name)
    }

    /// The file's kernels, parsed (the parser's error names the line and column).
    pub fn functions(&self) -> Result<Vec<Function>, Failure> {
        parse_functions(&self.text).map_err(|e| Failure::new(format!("parse error: {e}")))
    }

    /// The launch file next to this one (`NAME.launch.toml`).
    pub fn launch_path(&self) -> PathBuf {
        Launch::path_next_to(&self.path)
    }

    /// Whether the file has a launch file.
    pub fn has_launch(&self) -> bool {
        self.launch_path().exists()
    }

    /// The launch file, read.
    pub fn launch(&self) -> Result<Launch, Failure> {
        Launch::from_file(&self.launch_path()).map_err(|e| Failure::new(e.to_string()))
    }

    /// The kernel the launch file selects, with the launch prepared (buffers allocated
    /// and initialised).
    pub fn kernel(&self) -> Result<(Function, PreparedLaunch), Failure> {
        let funcs = self.functions()?;
        let launch = self.launch()?;
        let func = launch
            .select_kernel(&funcs)
            .map_err(|e| Failure::new(e.to_string()))?
            .clone();
        let prepared = launch
            .prepare(&func)
            .map_err(|e| Failure::new(e.to_string()))?;
        Ok((func, prepared))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_the_leading_comment_block() {
        let h = Header::parse(
            "; doc\n; test run passes=linearize\n\n;set verify=true\n; test compile\nkernel %k() {\n; test verify\n",
        )
        .unwrap();
        assert_eq!(h.commands.len(), 2);
        assert_eq!(h.commands[0].kind, TestKind::Run);
        assert_eq!(h.commands[0].option("passes"), Some("linearize"));
        assert_eq!(h.commands[0].line, 2);
        assert_eq!(h.commands[1].kind, TestKind::Compile);
        assert_eq!(h.settings, vec![("verify".into(), "true".into(), 4)]);
    }

    #[test]
    fn malformed_headers_name_their_line() {
        let e = Header::parse("; x\n; test runn\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(
            e.message.contains("unknown test kind `runn`"),
            "{}",
            e.message
        );
        let e = Header::parse("; test run passes\n").unwrap_err();
        assert!(e.message.contains("`passes` is not a `name=value`"));
    }
}
