//! Just enough CSV (RFC 4180) for adjudication sheets: quoted fields with commas, quotes and
//! newlines, `\n` or `\r\n` line ends, a byte-order mark tolerated; each record keeps the line
//! it starts on for messages.

/// Quotes a field when it needs it.
pub fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) || text.starts_with(' ') || text.ends_with(' ') {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// One line of fields.
pub fn record(fields: &[&str]) -> String {
    let mut line = fields.iter().map(|f| field(f)).collect::<Vec<_>>().join(",");
    line.push('\n');
    line
}

/// A record and the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub line: usize,
    pub fields: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct CsvError {
    pub line: usize,
    pub message: String,
}

/// Parses the whole text; blank lines are skipped.
pub fn parse(text: &str) -> Result<Vec<Record>, CsvError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut records = Vec::new();
    let mut fields = Vec::new();
    let mut current = String::new();
    let mut line = 1;
    let mut start = 1;
    let mut quoted = false;
    let mut was_quoted = false;
    let mut chars = text.chars().peekable();
    let mut at_field_start = true;
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    current.push('"');
                }
                '"' => quoted = false,
                '\n' => {
                    line += 1;
                    current.push('\n');
                }
                _ => current.push(c),
            }
            continue;
        }
        match c {
            '"' if at_field_start => {
                quoted = true;
                was_quoted = true;
                at_field_start = false;
            }
            '"' => return Err(CsvError { line, message: "a quote inside an unquoted field (quote the whole field and double the quote)".into() }),
            ',' => {
                fields.push(std::mem::take(&mut current));
                at_field_start = true;
                was_quoted = false;
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                fields.push(std::mem::take(&mut current));
                if !(fields.len() == 1 && fields[0].is_empty() && !was_quoted) {
                    records.push(Record { line: start, fields: std::mem::take(&mut fields) });
                }
                fields.clear();
                line += 1;
                start = line;
                at_field_start = true;
                was_quoted = false;
            }
            _ if was_quoted && !at_field_start => {
                return Err(CsvError { line, message: "text after a closing quote".into() });
            }
            _ => {
                current.push(c);
                at_field_start = false;
            }
        }
    }
    if quoted {
        return Err(CsvError { line: start, message: "a quoted field is never closed".into() });
    }
    if !current.is_empty() || !fields.is_empty() || was_quoted {
        fields.push(current);
        records.push(Record { line: start, fields });
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let rows = [vec!["a", "b,c", "say \"hi\""], vec!["multi\nline", "", " padded "]];
        let text: String = rows.iter().map(|r| record(r)).collect();
        let parsed = parse(&text).expect("parses");
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].fields, rows[0]);
        assert_eq!(parsed[1].fields, rows[1]);
        assert_eq!(parsed[1].line, 2);
    }

    #[test]
    fn crlf_bom_blank_lines_and_a_last_line_without_newline() {
        let parsed = parse("\u{feff}a,b\r\n\r\n\"x\ny\",z\nlast,1").expect("parses");
        assert_eq!(parsed.iter().map(|r| r.line).collect::<Vec<_>>(), vec![1, 3, 5]);
        assert_eq!(parsed[1].fields, vec!["x\ny", "z"]);
        assert_eq!(parsed[2].fields, vec!["last", "1"]);
    }

    #[test]
    fn malformed_quotes_are_located() {
        assert_eq!(parse("a,b\nc,d\"e\n").expect_err("bad quote").line, 2);
        assert_eq!(parse("a\n\"open\n").expect_err("unclosed").line, 2);
    }
}
