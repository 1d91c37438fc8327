//! Runtime errors: what stopped a launch, and where.

use std::fmt;

use sim::Dim3;

use crate::ir::{Block, Inst};
use crate::source::{SourceMap, Span};

/// A fault, trap or limit that stopped a launch. Everything but the message is
/// optional: errors found before the first instruction runs (a bad launch shape) have
/// no location.
#[derive(Clone, Debug, PartialEq)]
pub struct RuntimeError {
    pub message: String,
    /// Source span of the instruction (`None` when the IR carries none).
    pub span: Option<Span>,
    /// Name of the function the instruction belongs to.
    pub function: Option<String>,
    pub block: Option<Block>,
    pub inst: Option<Inst>,
    /// The lane whose access or operation failed, when one lane did.
    pub lane: Option<u32>,
    /// Which gang was running: the block's coordinates and the gang within the block.
    pub gang: Option<(Dim3, u32)>,
    /// The faulting address, for memory faults.
    pub address: Option<u64>,
}

impl RuntimeError {
    /// An error with a message only.
    pub fn new(message: impl Into<String>) -> Self {
        RuntimeError {
            message: message.into(),
            span: None,
            function: None,
            block: None,
            inst: None,
            lane: None,
            gang: None,
            address: None,
        }
    }

    /// The error as a JSON object: `message`, then where it happened as far as known
    /// (`file`, `line`, `column` and `span` of the source, `function`, `lane`, `address`,
    /// the gang's `block` coordinates and `gang` index; `null` when unknown).
    pub fn to_json(&self, sources: &SourceMap) -> serde_json::Value {
        use serde_json::{json, Value};
        let (file, line, column, span) = match self.span {
            Some(s) => {
                let f = sources.get(s.file);
                let (line, col) = f.line_col(s.start);
                (
                    Value::from(f.name.as_str()),
                    Value::from(line),
                    Value::from(col),
                    json!([s.start, s.end]),
                )
            }
            None => (Value::Null, Value::Null, Value::Null, Value::Null),
        };
        json!({
            "message": self.message,
            "file": file,
            "line": line,
            "column": column,
            "span": span,
            "function": self.function,
            "lane": self.lane,
            "address": self.address,
            "block": self.gang.map(|(b, _)| [b.x, b.y, b.z]),
            "gang": self.gang.map(|(_, g)| g),
        })
    }

    /// `file:line:col: ` followed by the [`Display`](fmt::Display) text, for a CLI.
    pub fn render(&self, sources: &SourceMap) -> String {
        match self.span {
            Some(span) => format!("{}: {self}", sources.location(span)),
            None => self.to_string(),
        }
    }
}

/// `runtime error: MESSAGE (address 0x10000, lane 3, in @f block2 inst7, block (0,0,0) gang 1)`.
impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "runtime error: {}", self.message)?;
        let mut parts: Vec<String> = Vec::new();
        if let Some(a) = self.address {
            parts.push(format!("address {a:#x}"));
        }
        if let Some(l) = self.lane {
            parts.push(format!("lane {l}"));
        }
        if let Some(func) = &self.function {
            let mut s = format!("in @{func}");
            if let Some(b) = self.block {
                s.push_str(&format!(" {b}"));
            }
            if let Some(i) = self.inst {
                s.push_str(&format!(" {i}"));
            }
            parts.push(s);
        }
        if let Some((b, g)) = self.gang {
            parts.push(format!("block ({},{},{}) gang {g}", b.x, b.y, b.z));
        }
        if !parts.is_empty() {
            write!(f, " ({})", parts.join(", "))?;
        }
        Ok(())
    }
}

impl std::error::Error for RuntimeError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::FileId;
    use cranelift_entity::EntityRef;

    #[test]
    fn renders_location_and_context() {
        let mut sources = SourceMap::new();
        let file = sources.add("k.spmd", None, "int x;\nx = a[i];\n");
        let mut e = RuntimeError::new("access outside any live allocation");
        e.span = Some(Span::new(file, 11, 15));
        e.function = Some("k".into());
        e.block = Some(Block::new(1));
        e.inst = Some(Inst::new(4));
        e.lane = Some(3);
        e.address = Some(0x10040);
        e.gang = Some((Dim3::new(2, 0, 0), 1));
        assert_eq!(
            e.render(&sources),
            "k.spmd:2:5: runtime error: access outside any live allocation \
             (address 0x10040, lane 3, in @k block1 inst4, block (2,0,0) gang 1)"
        );
        assert_eq!(RuntimeError::new("x").to_string(), "runtime error: x");
        let _ = FileId(0);
    }
}
