//! Spans as OTLP's `ExportTraceServiceRequest` in protobuf (OTLP/HTTP, `application/x-protobuf`,
//! opentelemetry-proto v1): the few messages a span needs, written field by field. Protobuf's
//! wire format is varints, fixed-width numbers and length-prefixed bytes; six messages do not
//! need a code generator (the tests decode the output with the official `opentelemetry-proto`
//! package).

use super::{Kind, SpanData, Value};

/// Who sends the spans: `service.name` and the instrumentation scope's version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// `service.name` (`OTEL_SERVICE_NAME`, `[otel] service_name`, `lurkbot`).
    pub service_name: String,
    /// `service.instance.id`: the gateway's id.
    pub instance: Option<String>,
}

/// `spans` as one `ExportTraceServiceRequest` from `resource`.
pub fn encode_request(resource: &Resource, spans: &[SpanData]) -> Vec<u8> {
    let mut scope_spans = Vec::new();
    message(&mut scope_spans, 1, |scope| {
        string(scope, 1, "lurkbot");
        string(scope, 2, env!("CARGO_PKG_VERSION"));
    });
    for span in spans {
        message(&mut scope_spans, 2, |out| encode_span(out, span));
    }
    let mut resource_spans = Vec::new();
    message(&mut resource_spans, 1, |out| {
        attribute(
            out,
            1,
            "service.name",
            &Value::Str(resource.service_name.clone()),
        );
        if let Some(instance) = &resource.instance {
            attribute(out, 1, "service.instance.id", &Value::Str(instance.clone()));
        }
        attribute(
            out,
            1,
            "service.version",
            &Value::Str(env!("CARGO_PKG_VERSION").into()),
        );
    });
    bytes(&mut resource_spans, 2, &scope_spans);
    let mut request = Vec::new();
    bytes(&mut request, 1, &resource_spans);
    request
}

/// `Span`: 1 trace_id, 2 span_id, 4 parent_span_id, 5 name, 6 kind, 7 start, 8 end,
/// 9 attributes, 15 status.
fn encode_span(out: &mut Vec<u8>, span: &SpanData) {
    bytes(out, 1, &span.context.trace_id);
    bytes(out, 2, &span.context.span_id);
    if let Some(parent) = &span.parent {
        bytes(out, 4, parent);
    }
    string(out, 5, &span.name);
    varint_field(
        out,
        6,
        match span.kind {
            Kind::Internal => 1,
            Kind::Client => 3,
        },
    );
    fixed64(out, 7, span.start_ns);
    fixed64(out, 8, span.end_ns);
    for (key, value) in &span.attributes {
        attribute(out, 9, key, value);
    }
    // Status: 2 message, 3 code (1 ok, 2 error).
    message(out, 15, |status| match &span.error {
        Some(error) => {
            string(status, 2, error);
            varint_field(status, 3, 2);
        }
        None => varint_field(status, 3, 1),
    });
}

/// A `KeyValue` (1 key, 2 `AnyValue`: 1 string, 2 bool, 3 int, 4 double) as field `field`.
fn attribute(out: &mut Vec<u8>, field: u32, key: &str, value: &Value) {
    message(out, field, |kv| {
        string(kv, 1, key);
        message(kv, 2, |any| match value {
            Value::Str(s) => string(any, 1, s),
            Value::Bool(b) => varint_field(any, 2, u64::from(*b)),
            // int64: two's complement as a varint.
            Value::Int(i) => varint_field(any, 3, *i as u64),
            Value::Float(f) => {
                tag(any, 4, 1);
                any.extend_from_slice(&f.to_le_bytes());
            }
        });
    });
}

fn tag(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn varint_field(out: &mut Vec<u8>, field: u32, value: u64) {
    tag(out, field, 0);
    varint(out, value);
}

fn fixed64(out: &mut Vec<u8>, field: u32, value: u64) {
    tag(out, field, 1);
    out.extend_from_slice(&value.to_le_bytes());
}

fn bytes(out: &mut Vec<u8>, field: u32, value: &[u8]) {
    tag(out, field, 2);
    varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

fn string(out: &mut Vec<u8>, field: u32, value: &str) {
    bytes(out, field, value.as_bytes());
}

fn message(out: &mut Vec<u8>, field: u32, write: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    write(&mut inner);
    bytes(out, field, &inner);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_fields_are_protobufs() {
        let mut out = Vec::new();
        varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        let mut out = Vec::new();
        varint_field(&mut out, 3, (-1i64) as u64);
        assert_eq!(
            out.len(),
            11,
            "a negative int64 takes ten bytes after its tag"
        );
        let mut out = Vec::new();
        string(&mut out, 5, "hi");
        assert_eq!(out, [0x2a, 2, b'h', b'i']);
    }
}
