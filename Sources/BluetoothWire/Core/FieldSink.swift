/// The name of a field: UTF-8 bytes that outlive the call taking it (a literal, whose
/// bytes are static, or a tree's String while ``FieldSink/field(_:)`` writes it). Trivial
/// to pass: no reference counting on the hot path.
public struct FieldName: ExpressibleByStringLiteral {
    /// The bytes.
    public let utf8: UnsafeRawBufferPointer

    /// A literal name.
    @inlinable public init(stringLiteral value: StaticString) {
        utf8 = value.hasPointerRepresentation ? UnsafeRawBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount)
            : UnsafeRawBufferPointer(start: nil, count: 0)
    }

    /// A name whose bytes stay valid while it is used.
    @inlinable public init(unsafeUTF8 utf8: UnsafeRawBufferPointer) { self.utf8 = utf8 }

    /// The name's UTF-8 bytes.
    @inlinable public func withUTF8<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R { body(utf8) }

    /// The name as a String (for the field trees).
    public var string: String { String(decoding: utf8, as: UTF8.self) }
}

/// Where a decoded value describes itself, field by field: the text and JSON writers
/// (straight into an output buffer, nothing built in between) and ``FieldTree`` (the
/// ``Field`` values of ``FieldDescribable``). One description per type serves all three,
/// so `decode`, `replay`, `scan` and the tests cannot disagree.
///
/// Inside a list the names are ignored: items have none. Every `begin` has its `end`.
public protocol FieldSink: ~Copyable {
    /// An unsigned number.
    mutating func uint(_ name: FieldName, _ value: UInt64)
    /// A signed number.
    mutating func int(_ name: FieldName, _ value: Int64)
    /// A real number (non-finite values are `null` in JSON).
    mutating func double(_ name: FieldName, _ value: Double)
    /// A yes/no value.
    mutating func bool(_ name: FieldName, _ value: Bool)
    /// A string.
    mutating func text(_ name: FieldName, _ value: String)
    /// A string given as literal text.
    mutating func text(_ name: FieldName, literal value: StaticString)
    /// A string given as UTF-8 bytes off the wire (invalid sequences shown as U+FFFD, as
    /// `String(decoding:as:)` does).
    mutating func text(_ name: FieldName, utf8 value: UnsafeRawBufferPointer)
    /// A UUID as text, in its short form when it has one (``BluetoothUUID/description``).
    mutating func uuid(_ name: FieldName, _ value: BluetoothUUID)
    /// An address as text (``BluetoothAddress/description``).
    mutating func address(_ name: FieldName, _ value: BluetoothAddress)
    /// Raw bytes.
    mutating func bytes(_ name: FieldName, _ value: UnsafeRawBufferPointer)
    /// A number with its symbolic name (an opcode, an error code, a type).
    mutating func named(_ name: FieldName, _ value: UInt64, _ label: String)
    /// A number with a literal symbolic name.
    mutating func named(_ name: FieldName, _ value: UInt64, literal label: StaticString)
    /// A number with a symbolic name given as UTF-8 (an assigned-numbers ``AssignedNumbers/Name``).
    mutating func named(_ name: FieldName, _ value: UInt64, utf8 label: UnsafeRawBufferPointer)
    /// Starts a nested object; its fields follow until ``end()``.
    mutating func beginObject(_ name: FieldName)
    /// Starts a list of `count` items; they follow until ``end()``.
    mutating func beginList(_ name: FieldName, count: Int)
    /// Ends the innermost object or list.
    mutating func end()
}

extension FieldSink where Self: ~Copyable {
    /// A string from the assigned numbers (no allocation).
    @inlinable public mutating func text(_ name: FieldName, _ value: AssignedNumbers.Name) {
        text(name, utf8: UnsafeRawBufferPointer(value.utf8))
    }

    /// A number with its name from the assigned numbers (no allocation).
    @inlinable public mutating func named(_ name: FieldName, _ value: UInt64, _ label: AssignedNumbers.Name) {
        named(name, value, utf8: UnsafeRawBufferPointer(label.utf8))
    }

    /// Raw bytes from an array.
    @inlinable public mutating func bytes(_ name: FieldName, _ value: [UInt8]) {
        value.withUnsafeBytes { bytes(name, $0) }
    }

    /// A 16-bit value shown as a number.
    @inlinable public mutating func hex16(_ name: FieldName, _ value: UInt16) { uint(name, UInt64(value)) }

    /// A field of a tree (what ``FieldDescribable/fields`` gives), written to this sink.
    public mutating func field(_ f: Field) {
        var name = f.name
        name.withUTF8 { value(FieldName(unsafeUTF8: UnsafeRawBufferPointer($0)), f.value) }
    }

    /// Fields of a tree, in order.
    public mutating func fields(_ list: [Field]) {
        for f in list { field(f) }
    }

    /// One value of a tree under `name`.
    public mutating func value(_ name: FieldName, _ v: FieldValue) {
        switch v {
        case .uint(let u): uint(name, u)
        case .int(let i): int(name, i)
        case .double(let d): double(name, d)
        case .bool(let b): bool(name, b)
        case .text(let t): text(name, t)
        case .bytes(let b): bytes(name, b)
        case .named(let raw, let label): named(name, raw, label)
        case .object(let sub):
            beginObject(name)
            fields(sub)
            end()
        case .list(let items):
            beginList(name, count: items.count)
            for item in items { value("", item) }
            end()
        }
    }
}

/// A ``FieldSink`` that builds the ``Field`` tree (for ``FieldDescribable/fields`` and tests).
public struct FieldTree: FieldSink {
    private enum Frame {
        case object(FieldName, [Field])
        case list(FieldName, [FieldValue])
    }

    private var stack: [Frame] = []
    /// The top-level fields written so far.
    public private(set) var fields: [Field] = []

    /// An empty tree.
    public init() {}

    /// The fields `describe` writes.
    public static func build(_ describe: (inout FieldTree) -> Void) -> [Field] {
        var t = FieldTree()
        describe(&t)
        return t.fields
    }

    /// The one value `describe` writes (under any name), or an empty object.
    public static func value(_ describe: (inout FieldTree) -> Void) -> FieldValue {
        var t = FieldTree()
        describe(&t)
        return t.fields.first?.value ?? .object([])
    }

    private mutating func add(_ name: FieldName, _ v: FieldValue) {
        guard let top = stack.popLast() else {
            fields.append(Field(name.string, v))
            return
        }
        switch top {
        case .object(let n, var list):
            list.append(Field(name.string, v))
            stack.append(.object(n, list))
        case .list(let n, var items):
            items.append(v)
            stack.append(.list(n, items))
        }
    }

    public mutating func uint(_ name: FieldName, _ value: UInt64) { add(name, .uint(value)) }
    public mutating func int(_ name: FieldName, _ value: Int64) { add(name, .int(value)) }
    public mutating func double(_ name: FieldName, _ value: Double) { add(name, .double(value)) }
    public mutating func bool(_ name: FieldName, _ value: Bool) { add(name, .bool(value)) }
    public mutating func text(_ name: FieldName, _ value: String) { add(name, .text(value)) }
    public mutating func text(_ name: FieldName, literal value: StaticString) { add(name, .text(value.description)) }
    public mutating func text(_ name: FieldName, utf8 value: UnsafeRawBufferPointer) {
        add(name, .text(String(decoding: value, as: UTF8.self)))
    }
    public mutating func uuid(_ name: FieldName, _ value: BluetoothUUID) { add(name, .text(value.description)) }
    public mutating func address(_ name: FieldName, _ value: BluetoothAddress) { add(name, .text(value.description)) }
    public mutating func bytes(_ name: FieldName, _ value: UnsafeRawBufferPointer) { add(name, .bytes(Array(value))) }
    public mutating func named(_ name: FieldName, _ value: UInt64, _ label: String) { add(name, .named(value, label)) }
    public mutating func named(_ name: FieldName, _ value: UInt64, literal label: StaticString) {
        add(name, .named(value, label.description))
    }
    public mutating func named(_ name: FieldName, _ value: UInt64, utf8 label: UnsafeRawBufferPointer) {
        add(name, .named(value, String(decoding: label, as: UTF8.self)))
    }
    public mutating func beginObject(_ name: FieldName) { stack.append(.object(name, [])) }
    public mutating func beginList(_ name: FieldName, count: Int) { stack.append(.list(name, [])) }
    public mutating func end() {
        switch stack.popLast() {
        case .object(let n, let list)?: add(n, .object(list))
        case .list(let n, let items)?: add(n, .list(items))
        case nil: break
        }
    }
}
