import BluetoothWire

/// Writes fields as ` name=value` pairs on one text line (a sensor reading at the end of a
/// scan line: ` temperature=25.06 humidity=50.55`). Text is written as it is (repaired
/// UTF-8), objects as `name={a=1 b=2}`, lists as `name=[1,2]`. A top-level `format` field
/// is left out: the caller has written it as the label.
struct KeyValueSink: FieldSink, ~Copyable {
    let out: UnsafeMutablePointer<OutputBuffer>
    /// Nesting: 0 at the top; items of a list are separated by commas.
    private var depth = 0
    private var inList: [Bool] = []
    private var written: [Int] = [0]

    init(_ out: UnsafeMutablePointer<OutputBuffer>) { self.out = out }

    private mutating func key(_ name: FieldName) -> Bool {
        if depth == 0 && name.utf8.elementsEqual("format".utf8) { return false }
        let n = written[written.count - 1]
        written[written.count - 1] = n + 1
        if inList.last == true {
            if n > 0 { out.pointee.byte(UInt8(ascii: ",")) }
            return true
        }
        if n > 0 || depth == 0 { out.pointee.byte(UInt8(ascii: " ")) }
        out.pointee.append(name.utf8)
        out.pointee.byte(UInt8(ascii: "="))
        return true
    }

    mutating func uint(_ name: FieldName, _ value: UInt64) { if key(name) { out.pointee.decimal(value) } }
    mutating func int(_ name: FieldName, _ value: Int64) { if key(name) { out.pointee.decimal(value) } }
    mutating func double(_ name: FieldName, _ value: Double) {
        guard key(name) else { return }
        if value.isFinite { out.pointee.double(value) } else { out.pointee.raw("n/a") }
    }
    mutating func bool(_ name: FieldName, _ value: Bool) { if key(name) { out.pointee.raw(value ? "yes" : "no") } }
    mutating func text(_ name: FieldName, _ value: String) { if key(name) { out.pointee.utf8(value) } }
    mutating func text(_ name: FieldName, literal value: StaticString) {
        if key(name) { out.pointee.append(UnsafeRawBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount)) }
    }
    mutating func text(_ name: FieldName, utf8 value: UnsafeRawBufferPointer) { if key(name) { out.pointee.utf8Repairing(value) } }
    mutating func uuid(_ name: FieldName, _ value: BluetoothUUID) { if key(name) { out.pointee.uuid(value) } }
    mutating func address(_ name: FieldName, _ value: BluetoothAddress) { if key(name) { out.pointee.address(value) } }
    mutating func bytes(_ name: FieldName, _ value: UnsafeRawBufferPointer) { if key(name) { out.pointee.hexLower(value) } }
    mutating func named(_ name: FieldName, _ value: UInt64, _ label: String) {
        if key(name) { out.pointee.utf8(label); out.pointee.raw("("); out.pointee.decimal(value); out.pointee.raw(")") }
    }
    mutating func named(_ name: FieldName, _ value: UInt64, literal label: StaticString) {
        named(name, value, utf8: UnsafeRawBufferPointer(start: label.utf8Start, count: label.utf8CodeUnitCount))
    }
    mutating func named(_ name: FieldName, _ value: UInt64, utf8 label: UnsafeRawBufferPointer) {
        if key(name) { out.pointee.append(label); out.pointee.raw("("); out.pointee.decimal(value); out.pointee.raw(")") }
    }
    mutating func beginObject(_ name: FieldName) {
        _ = key(name)
        out.pointee.byte(UInt8(ascii: "{"))
        open(list: false)
    }
    mutating func beginList(_ name: FieldName, count: Int) {
        _ = key(name)
        out.pointee.byte(UInt8(ascii: "["))
        open(list: true)
    }
    private mutating func open(list: Bool) {
        depth += 1
        inList.append(list)
        written.append(0)
    }
    mutating func end() {
        guard depth > 0 else { return }
        depth -= 1
        out.pointee.byte(inList.removeLast() ? UInt8(ascii: "]") : UInt8(ascii: "}"))
        written.removeLast()
    }
}
