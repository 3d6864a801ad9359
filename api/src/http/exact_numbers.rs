//! Finds integer literals in a JSON text that no 64-bit integer holds.
//!
//! serde_json (without its `arbitrary_precision` feature) reads an integer literal beyond
//! `u64::MAX` or below `i64::MIN` as the nearest `f64`, so `18446744073709551617` in a
//! free-form `details` object would be stored and served back as `18446744073709552000`.
//! The API refuses such a body instead of rounding it silently. The check reads the raw
//! text once more after a successful parse: a number's spelling (integer or fraction /
//! exponent) is gone from a parsed `Value`. Turning on `arbitrary_precision` was the
//! rejected alternative: it changes how every crate of the workspace compares and prints
//! numbers, for one check.
//!
//! Numbers written with a fraction or an exponent (`1.5`, `1e30`) are JSON's ordinary
//! binary floating point and are accepted as such.

use crate::error::FieldError;

/// Deeper than serde_json's own recursion limit (128), so a text serde_json accepted is
/// scanned whole.
const MAX_DEPTH: usize = 256;

/// One step of the path to a value: an object key or an array index.
enum Step {
    Key(String),
    Index(usize),
}

/// Every integer literal of `json` outside `i64::MIN..=u64::MAX`, as a VALIDATION_ERROR
/// detail naming its path (`details.stats.views`, `items[2]`). `json` is expected to be
/// valid JSON; on anything else the scan stops early and reports what it found so far.
pub fn inexact_integers(json: &[u8]) -> Vec<FieldError> {
    let mut s = Scanner {
        b: json,
        i: 0,
        path: Vec::new(),
        found: Vec::new(),
    };
    s.value(0);
    s.found
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    path: Vec<Step>,
    found: Vec<FieldError>,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// Scans one value; `false` when the text ended or broke off.
    fn value(&mut self, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        self.skip_ws();
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().is_some(),
            Some(b'-' | b'0'..=b'9') => {
                self.number();
                true
            }
            Some(b't' | b'f' | b'n') => {
                while self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
                    self.i += 1;
                }
                true
            }
            _ => false,
        }
    }

    fn object(&mut self, depth: usize) -> bool {
        self.i += 1; // {
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return true;
        }
        loop {
            self.skip_ws();
            let Some(key) = self.string() else {
                return false;
            };
            self.skip_ws();
            if self.peek() != Some(b':') {
                return false;
            }
            self.i += 1;
            self.path.push(Step::Key(key));
            let ok = self.value(depth + 1);
            self.path.pop();
            if !ok {
                return false;
            }
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return true;
                }
                _ => return false,
            }
        }
    }

    fn array(&mut self, depth: usize) -> bool {
        self.i += 1; // [
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return true;
        }
        let mut index = 0;
        loop {
            self.path.push(Step::Index(index));
            let ok = self.value(depth + 1);
            self.path.pop();
            if !ok {
                return false;
            }
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return true;
                }
                _ => return false,
            }
            index += 1;
        }
    }

    /// Reads a string literal and returns its decoded text.
    fn string(&mut self) -> Option<String> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.i;
        self.i += 1;
        loop {
            match self.peek()? {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    break;
                }
                _ => self.i += 1,
            }
        }
        let raw = self.b.get(start..self.i)?;
        Some(serde_json::from_slice::<String>(raw).unwrap_or_else(|_| {
            String::from_utf8_lossy(&raw[1..raw.len().saturating_sub(1)]).into_owned()
        }))
    }

    fn number(&mut self) {
        let start = self.i;
        let mut integer = true;
        while let Some(c) = self.peek() {
            match c {
                b'0'..=b'9' | b'-' | b'+' => {}
                b'.' | b'e' | b'E' => integer = false,
                _ => break,
            }
            self.i += 1;
        }
        if !integer {
            return;
        }
        let text = std::str::from_utf8(&self.b[start..self.i]).unwrap_or("");
        if text.parse::<i64>().is_ok() || text.parse::<u64>().is_ok() {
            return;
        }
        self.found.push(FieldError::new(
            self.path_text(),
            format!(
                "is the integer {text}, outside the range a JSON number is kept exactly in \
                 ({} to {}); send it as a string",
                i64::MIN,
                u64::MAX
            ),
        ));
    }

    fn path_text(&self) -> String {
        let mut out = String::new();
        for step in &self.path {
            match step {
                Step::Key(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                Step::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        if out.is_empty() {
            out.push_str("body");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::inexact_integers;

    fn fields(json: &str) -> Vec<String> {
        inexact_integers(json.as_bytes())
            .into_iter()
            .map(|f| f.field)
            .collect()
    }

    #[test]
    fn integers_beyond_64_bits_are_named_by_path() {
        assert_eq!(
            fields(
                r#"{"details": {"a": 18446744073709551616, "b": [1, -9223372036854775809], "c\"d": {"e": 1e400}}, "n": 99999999999999999999999}"#
            ),
            ["details.a", "details.b[1]", "n"]
        );
    }

    #[test]
    fn representable_numbers_pass() {
        assert!(
            fields(
                r#"{"max": 18446744073709551615, "min": -9223372036854775808, "f": 1.5, "e": 1e30, "s": "123456789012345678901234567890", "t": true, "x": null, "arr": [[], {}]}"#
            )
            .is_empty()
        );
    }

    #[test]
    fn broken_text_does_not_panic() {
        for text in [
            "", "{", "{\"a\"", "{\"a\":", "[1,", "\"abc", "{\"a\\", "-", "}",
        ] {
            let _ = inexact_integers(text.as_bytes());
        }
        assert_eq!(fields("[18446744073709551616"), ["[0]"]);
    }
}
