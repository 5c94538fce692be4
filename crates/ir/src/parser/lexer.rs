//! The lexer of the `.wir` text format.
//!
//! It turns the text into tokens, each with the line and column where it starts, and drops
//! whitespace and comments (`;` to the end of the line) on the way. Tokens are produced on
//! demand, one at a time, so the parser reports the first problem in text order even when
//! it is a stray character far below, and a large file is never held twice in memory.
//!
//! The lexer knows nothing of the grammar: words (`iadd`, `v3`, `block2`, `i32`, `x`) are
//! all [`TokenKind::Word`], and numbers are kept as written. Deciding what a word or a
//! number means, and whether a number is well formed, is the parser's job, which can say
//! *what* it expected in its error message.
//!
//! Columns count characters, not bytes, so positions agree with what an editor shows. The
//! lexer keeps only the line and the byte where it starts, and a token's column is its
//! byte offset from there: everything before a token on its line is ASCII, since a comment
//! runs to the end of its line and any other non-ASCII character is an error, reported at
//! its first byte. Nothing is counted per character.

use super::ParseError;
use crate::srcloc::SourceLoc;
use core::fmt;

/// What kind of token a [`Token`] is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// `[A-Za-z_][A-Za-z0-9_]*`: keywords, opcodes, entity names, types, parameter names.
    Word,
    /// A token that starts with a digit: an integer or float literal as written, to be
    /// checked by the parser (`42`, `0xff`, `1_000`, `1.5e-30`, and malformed ones too).
    Number,
    /// `%` followed by a name: a kernel name. The token's text includes the `%`.
    KernelName,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
    /// `[`
    LBracket,
    /// `]`
    RBracket,
    /// `,`
    Comma,
    /// `:`
    Colon,
    /// `=`
    Equal,
    /// `.`
    Dot,
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// The end of the text.
    Eof,
}

/// A token: its kind, its text and where it starts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Token<'a> {
    /// The kind of token.
    pub kind: TokenKind,
    /// The token's text, exactly as written (empty for [`TokenKind::Eof`]).
    pub text: &'a str,
    /// The line and column of the token's first character.
    pub loc: SourceLoc,
}

/// Longest token text quoted in an error message; longer ones are cut with `...`, so a
/// megabyte-long word cannot make a megabyte-long message.
const MAX_QUOTED: usize = 40;

/// Quotes `text` for an error message, shortened when very long.
pub(crate) fn quote(text: &str) -> String {
    format!("`{}`", shorten(text))
}

/// `text`, cut to a length fit for an error message.
pub(crate) fn shorten(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

impl fmt::Display for Token<'_> {
    /// How an error message names the token: quoted text, or "end of input".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kind == TokenKind::Eof {
            f.write_str("end of input")
        } else {
            f.write_str(&quote(self.text))
        }
    }
}

/// Splits a text into [`Token`]s.
pub(crate) struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    line: u32,
    /// The byte offset where the current line starts.
    line_start: usize,
}

fn is_word_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

/// Which bytes continue a word (`[A-Za-z0-9_]`), looked up rather than tested range by
/// range: the lexer asks for every byte of every word.
static WORD_CHAR: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || c == b'_';
        b += 1;
    }
    t
};

fn is_word_char(b: u8) -> bool {
    WORD_CHAR[b as usize]
}

/// The error for a `%` not followed by a name. Errors are built out of line: the lexer
/// runs once per token, and its fast path stays smaller without them.
#[cold]
#[inline(never)]
fn no_kernel_name(loc: SourceLoc) -> ParseError {
    ParseError::new(loc, "expected a kernel name after `%`, such as `%main`")
}

/// The error for a character no token starts with; `rest` is the text from it on.
#[cold]
#[inline(never)]
fn unexpected_character(rest: Option<&str>, loc: SourceLoc) -> ParseError {
    let c = rest.and_then(|s| s.chars().next());
    let shown = c.map_or_else(|| "?".to_string(), |c| c.escape_debug().to_string());
    ParseError::new(loc, format!("unexpected character `{shown}`"))
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `src`.
    pub fn new(src: &'a str) -> Self {
        Lexer {
            src,
            pos: 0,
            line: 1,
            line_start: 0,
        }
    }

    /// How many bytes of the text are still to be read.
    pub fn remaining(&self) -> usize {
        self.src.len().saturating_sub(self.pos)
    }

    /// The line and column of byte `pos` of the current line.
    fn loc_at(&self, pos: usize) -> SourceLoc {
        let col = u32::try_from(pos - self.line_start)
            .unwrap_or(u32::MAX)
            .saturating_add(1);
        SourceLoc::new(self.line, col)
    }

    /// Starts a new line at byte `pos`.
    fn new_line(&mut self, pos: usize) {
        self.line = self.line.saturating_add(1);
        self.line_start = pos;
    }

    /// The end of the run of bytes from `from` that `pred` accepts.
    fn scan(&self, from: usize, pred: impl Fn(u8) -> bool) -> usize {
        let rest = self.src.as_bytes().get(from..).unwrap_or_default();
        from + rest.iter().position(|&b| !pred(b)).unwrap_or(rest.len())
    }

    /// Skips whitespace and comments. A line break is `\n`, `\r\n` (counted once, at its
    /// `\n`) or a lone `\r`, as editors show them.
    fn skip_trivia(&mut self) {
        let bytes = self.src.as_bytes();
        let mut pos = self.pos;
        loop {
            match bytes.get(pos) {
                Some(b' ' | b'\t') => pos += 1,
                Some(b'\n') => {
                    pos += 1;
                    self.new_line(pos);
                }
                Some(b'\r') => {
                    pos += 1;
                    if bytes.get(pos) != Some(&b'\n') {
                        self.new_line(pos);
                    }
                }
                // A comment: to the end of the line, whose break the next turn counts.
                Some(b';') => pos = self.scan(pos, |b| b != b'\n' && b != b'\r'),
                _ => break,
            }
        }
        self.pos = pos;
    }

    /// The next token; [`TokenKind::Eof`] at the end, every time it is asked again.
    /// Inlined into the parser's one caller of it, so that a token is not returned through
    /// a call of its own.
    #[inline(always)]
    pub fn next_token(&mut self) -> Result<Token<'a>, ParseError> {
        self.skip_trivia();
        let start = self.pos;
        let loc = self.loc_at(start);
        let Some(&b) = self.src.as_bytes().get(start) else {
            return Ok(Token {
                kind: TokenKind::Eof,
                text: "",
                loc,
            });
        };
        // Words are most of the tokens (opcodes, values, blocks, types): they are tested
        // first, and their text taken by splitting at byte offsets the scan found on ASCII
        // bytes.
        if is_word_start(b) {
            let end = self.scan(start + 1, is_word_char);
            self.pos = end;
            return Ok(Token {
                kind: TokenKind::Word,
                text: self.src.get(start..end).unwrap_or(""),
                loc,
            });
        }
        let kind = match b {
            b'(' => TokenKind::LParen,
            b')' => TokenKind::RParen,
            b'{' => TokenKind::LBrace,
            b'}' => TokenKind::RBrace,
            b'[' => TokenKind::LBracket,
            b']' => TokenKind::RBracket,
            b',' => TokenKind::Comma,
            b':' => TokenKind::Colon,
            b'=' => TokenKind::Equal,
            b'.' => TokenKind::Dot,
            b'+' => TokenKind::Plus,
            b'-' => TokenKind::Minus,
            b'%' => {
                // Kernel names may also hold dots (`%lib.saxpy`).
                self.pos = self.scan(start + 1, |b| is_word_char(b) || b == b'.');
                if self.pos == start + 1 {
                    return Err(no_kernel_name(loc));
                }
                return Ok(self.token(TokenKind::KernelName, start, loc));
            }
            b if b.is_ascii_digit() => {
                self.lex_number(start);
                return Ok(self.token(TokenKind::Number, start, loc));
            }
            _ => return Err(unexpected_character(self.src.get(start..), loc)),
        };
        self.pos = start + 1;
        Ok(self.token(kind, start, loc))
    }

    /// Consumes a number: a maximal run of letters, digits, `_` and `.`, plus a sign right
    /// after the exponent marker of a decimal literal (`1e-30`). Hex literals have no
    /// exponent (their `e` is a digit), so `0x1e-4` stays `0x1e`, `-`, `4`.
    fn lex_number(&mut self, start: usize) {
        let bytes = self.src.as_bytes();
        let hex =
            bytes.get(start) == Some(&b'0') && matches!(bytes.get(start + 1), Some(b'x' | b'X'));
        let mut pos = start;
        while let Some(&b) = bytes.get(pos) {
            let after_exponent_marker =
                !hex && pos > start && matches!(bytes[pos - 1], b'e' | b'E');
            if is_word_char(b) || b == b'.' || (after_exponent_marker && matches!(b, b'+' | b'-')) {
                pos += 1;
            } else {
                break;
            }
        }
        self.pos = pos;
    }

    fn token(&self, kind: TokenKind, start: usize, loc: SourceLoc) -> Token<'a> {
        Token {
            kind,
            // Token boundaries are ASCII bytes, hence always character boundaries.
            text: self.src.get(start..self.pos).unwrap_or(""),
            loc,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex(src: &str) -> Vec<(TokenKind, String, u32, u32)> {
        let mut lexer = Lexer::new(src);
        let mut out = Vec::new();
        loop {
            let t = lexer.next_token().unwrap();
            out.push((t.kind, t.text.to_string(), t.loc.line, t.loc.col));
            if t.kind == TokenKind::Eof {
                return out;
            }
        }
    }

    #[test]
    fn tokens_and_positions() {
        use TokenKind::*;
        let toks = lex("kernel %k(a: i32) {\n  v1 = load.f32 global v0-4 ; c\nblock0:}");
        let expected = [
            (Word, "kernel", 1, 1),
            (KernelName, "%k", 1, 8),
            (LParen, "(", 1, 10),
            (Word, "a", 1, 11),
            (Colon, ":", 1, 12),
            (Word, "i32", 1, 14),
            (RParen, ")", 1, 17),
            (LBrace, "{", 1, 19),
            (Word, "v1", 2, 3),
            (Equal, "=", 2, 6),
            (Word, "load", 2, 8),
            (Dot, ".", 2, 12),
            (Word, "f32", 2, 13),
            (Word, "global", 2, 17),
            (Word, "v0", 2, 24),
            (Minus, "-", 2, 26),
            (Number, "4", 2, 27),
            (Word, "block0", 3, 1),
            (Colon, ":", 3, 7),
            (RBrace, "}", 3, 8),
            (Eof, "", 3, 9),
        ];
        assert_eq!(toks.len(), expected.len());
        for (got, want) in toks.iter().zip(expected) {
            assert_eq!((got.0, got.1.as_str(), got.2, got.3), want);
        }
    }

    #[test]
    fn numbers() {
        let texts: Vec<String> = lex("1e-30 1.5E+3 0x1e-4 1_000 16abc 0x7fc00000")
            .into_iter()
            .map(|t| t.1)
            .collect();
        assert_eq!(
            texts,
            [
                "1e-30",
                "1.5E+3",
                "0x1e",
                "-",
                "4",
                "1_000",
                "16abc",
                "0x7fc00000",
                ""
            ]
        );
    }

    #[test]
    fn columns_count_characters() {
        let toks = lex("; héllo wörld\n  ; ünïcode\n\tx");
        assert_eq!((toks[0].2, toks[0].3), (3, 2));
        let toks = lex("; ü\r\nx");
        assert_eq!((toks[0].2, toks[0].3), (2, 1));
    }

    #[test]
    fn a_lone_carriage_return_breaks_lines() {
        // Lone CR (classic Mac) breaks a line; CRLF is still one break.
        let toks = lex("a\rb\r\nc\n\rd");
        let pos: Vec<_> = toks.iter().map(|t| (t.2, t.3)).collect();
        assert_eq!(pos, [(1, 1), (2, 1), (3, 1), (5, 1), (5, 2)]);
        // A comment ends at a lone CR too.
        let toks = lex("; comment\rx");
        assert_eq!((toks[0].1.as_str(), toks[0].2, toks[0].3), ("x", 2, 1));
        let err = Lexer::new("\r\r  #").next_token().unwrap_err();
        assert_eq!(err.to_string(), "3:3: unexpected character `#`");
    }

    #[test]
    fn errors() {
        let err = Lexer::new("  #").next_token().unwrap_err();
        assert_eq!(err.to_string(), "1:3: unexpected character `#`");
        let err = Lexer::new("é").next_token().unwrap_err();
        assert_eq!(err.to_string(), "1:1: unexpected character `é`");
        let err = Lexer::new("% x").next_token().unwrap_err();
        assert_eq!(
            err.to_string(),
            "1:1: expected a kernel name after `%`, such as `%main`"
        );
    }

    #[test]
    fn long_tokens_are_shortened_in_messages() {
        let long = "x".repeat(100);
        let q = quote(&long);
        assert!(q.len() < 50 && q.ends_with("...`"));
    }
}
