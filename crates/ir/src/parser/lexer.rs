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
//! Columns count characters, not bytes, so positions agree with what an editor shows even
//! after non-ASCII text in a comment.

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
    col: u32,
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

impl<'a> Lexer<'a> {
    /// A lexer at the start of `src`.
    pub fn new(src: &'a str) -> Self {
        Lexer {
            src,
            pos: 0,
            line: 1,
            col: 1,
        }
    }

    fn peek_byte(&self) -> Option<u8> {
        self.src.as_bytes().get(self.pos).copied()
    }

    /// Consumes one byte, keeping the line and column of the next character up to date.
    /// Continuation bytes of a UTF-8 sequence do not advance the column. A line break is
    /// `\n`, `\r\n` (counted once, at its `\n`) or a lone `\r`, as editors show them.
    fn bump(&mut self) {
        if let Some(b) = self.peek_byte() {
            self.pos += 1;
            let lone_cr = b == b'\r' && self.peek_byte() != Some(b'\n');
            if b == b'\n' || lone_cr {
                self.line = self.line.saturating_add(1);
                self.col = 1;
            } else if b & 0xc0 != 0x80 {
                self.col = self.col.saturating_add(1);
            }
        }
    }

    fn bump_while(&mut self, pred: impl Fn(u8) -> bool) {
        while self.peek_byte().is_some_and(&pred) {
            self.bump();
        }
    }

    /// Consumes a run of bytes that `pred` accepts, all of them ASCII other than line
    /// breaks: each is one column, so the run is skipped in one step.
    fn bump_ascii_while(&mut self, pred: impl Fn(u8) -> bool) {
        let rest = &self.src.as_bytes()[self.pos..];
        let n = rest.iter().position(|&b| !pred(b)).unwrap_or(rest.len());
        self.pos += n;
        self.col = self
            .col
            .saturating_add(u32::try_from(n).unwrap_or(u32::MAX));
    }

    /// Skips whitespace and comments. Blanks and line breaks, nearly all of the trivia in
    /// a kernel, are scanned here byte by byte with the position in locals; a comment
    /// goes through [`Lexer::bump`], which counts its characters.
    fn skip_trivia(&mut self) {
        let bytes = self.src.as_bytes();
        loop {
            let (mut pos, mut line, mut col) = (self.pos, self.line, self.col);
            while let Some(&b) = bytes.get(pos) {
                match b {
                    b' ' | b'\t' => col = col.saturating_add(1),
                    // `\r\n` is one break, counted at its `\n`.
                    b'\r' if bytes.get(pos + 1) == Some(&b'\n') => {}
                    b'\n' | b'\r' => {
                        line = line.saturating_add(1);
                        col = 1;
                    }
                    _ => break,
                }
                pos += 1;
            }
            (self.pos, self.line, self.col) = (pos, line, col);
            if bytes.get(pos) != Some(&b';') {
                return;
            }
            self.bump_while(|b| b != b'\n' && b != b'\r');
        }
    }

    /// The next token; [`TokenKind::Eof`] at the end, every time it is asked again.
    pub fn next_token(&mut self) -> Result<Token<'a>, ParseError> {
        self.skip_trivia();
        let loc = SourceLoc::new(self.line, self.col);
        let start = self.pos;
        let Some(b) = self.peek_byte() else {
            return Ok(Token {
                kind: TokenKind::Eof,
                text: "",
                loc,
            });
        };
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
                self.bump();
                // Kernel names may also hold dots (`%lib.saxpy`).
                self.bump_while(|b| is_word_char(b) || b == b'.');
                if self.pos == start + 1 {
                    return Err(ParseError::new(
                        loc,
                        "expected a kernel name after `%`, such as `%main`",
                    ));
                }
                return Ok(self.token(TokenKind::KernelName, start, loc));
            }
            b if is_word_start(b) => {
                self.bump_ascii_while(is_word_char);
                return Ok(self.token(TokenKind::Word, start, loc));
            }
            b if b.is_ascii_digit() => {
                self.lex_number(start);
                return Ok(self.token(TokenKind::Number, start, loc));
            }
            _ => {
                let c = self.src.get(start..).and_then(|s| s.chars().next());
                let shown = c.map_or_else(|| "?".to_string(), |c| c.escape_debug().to_string());
                return Err(ParseError::new(
                    loc,
                    format!("unexpected character `{shown}`"),
                ));
            }
        };
        self.bump();
        Ok(self.token(kind, start, loc))
    }

    /// Consumes a number: a maximal run of letters, digits, `_` and `.`, plus a sign right
    /// after the exponent marker of a decimal literal (`1e-30`). Hex literals have no
    /// exponent (their `e` is a digit), so `0x1e-4` stays `0x1e`, `-`, `4`.
    fn lex_number(&mut self, start: usize) {
        let bytes = self.src.as_bytes();
        let hex = bytes.get(self.pos) == Some(&b'0')
            && matches!(bytes.get(self.pos + 1), Some(b'x' | b'X'));
        while let Some(b) = self.peek_byte() {
            let after_exponent_marker =
                !hex && self.pos > start && matches!(bytes[self.pos - 1], b'e' | b'E');
            if is_word_char(b) || b == b'.' || (after_exponent_marker && matches!(b, b'+' | b'-')) {
                self.bump();
            } else {
                break;
            }
        }
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
