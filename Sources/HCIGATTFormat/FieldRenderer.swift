import BluetoothWire

/// Field trees rendered as indented text or as one-line JSON, through ``FieldWriter``
/// (the same writer the hot paths describe into directly). For the commands that print
/// a few lines; the per-line paths keep one writer and its buffer instead.
public enum FieldRenderer {
    /// The fields as indented text under `title` (no final newline).
    public static func text(title: String, fields: [Field]) -> String {
        var w = FieldWriter(format: .text, out: OutputBuffer(capacity: 256))
        w.beginRecord(type: "", title: title)
        w.fields(fields)
        return finish(&w)
    }

    /// One scalar value as text (numbers, hex bytes, strings quoted), as it appears in a
    /// text record after the field's name.
    public static func scalarText(_ v: FieldValue) -> String {
        var w = FieldWriter(format: .text, out: OutputBuffer(capacity: 64))
        // Inside an inline list a value is written without indentation or name.
        w.beginRecord()
        w.beginList("", count: 1)
        w.beginList("", count: 1)
        w.out.removeAll()
        w.value("", v)
        return w.out.string
    }

    /// The fields as one JSON object with `type` and `name` (the title) first.
    public static func json(type: String, title: String, fields: [Field]) -> String {
        var w = FieldWriter(format: .json, out: OutputBuffer(capacity: 1024))
        w.beginRecord(type: type, title: title)
        w.fields(fields)
        return finish(&w)
    }

    /// One JSON object from fields (no type/name keys).
    public static func jsonObject(_ fields: [Field]) -> String {
        var w = FieldWriter(format: .json, out: OutputBuffer(capacity: 1024))
        w.beginRecord()
        w.fields(fields)
        return finish(&w)
    }

    /// JSON for one value.
    public static func json(_ v: FieldValue) -> String {
        var w = FieldWriter(format: .json, out: OutputBuffer(capacity: 256))
        w.beginRecord()
        w.beginList("", count: 1)
        w.out.removeAll()
        w.value("", v)
        return w.out.string
    }

    /// The record's text without its final newline.
    private static func finish(_ w: inout FieldWriter) -> String {
        w.endRecord()
        w.out.removeLast()
        return w.out.string
    }
}
