/// Writes described fields straight into an ``OutputBuffer``, as indented text or as
/// JSON: the renderer of every command (`decode`, `replay`, `scan`, `gatt`, `monitor`).
///
/// Text: a title line, then one field per line indented two spaces per level; a list
/// shows its count and its items as `[n]`; a list inside a list is written inline
/// (`[a, b]`, `{name: value}`). JSON: one object per record on one line.
public struct FieldWriter: FieldSink, ~Copyable {
    /// Output format.
    public enum Format: Sendable { case text, json }

    /// The format written.
    public let format: Format
    /// The output (take it with `out.bytes`, clear with `out.removeAll()`).
    public var out: OutputBuffer

    private enum Kind: UInt8 { case none, object, list, inlineObject, inlineList }
    private struct Frame {
        var kind: Kind
        /// Text: the indent of this frame's fields (an object) or of the list's own line.
        var indent: Int
        /// Items or fields written in this frame.
        var count: Int
    }
    /// The innermost object or list (`nil` outside a record); its parents below it.
    private var top = Frame(kind: .none, indent: 0, count: 0)
    /// The parents of `top`, outermost first: a stack of our own (no uniqueness check or
    /// bounds-checked array per field), grown by doubling.
    private var parents: UnsafeMutablePointer<Frame>
    private var parentCapacity = 16
    private var depth = 0

    /// A writer appending to `out`.
    public init(format: Format, out: consuming OutputBuffer = OutputBuffer()) {
        self.format = format
        self.out = out
        parents = .allocate(capacity: parentCapacity)
    }

    deinit {
        parents.deallocate()
        namedCacheBytes?.deallocate()
    }

    private mutating func push(_ f: Frame) {
        if top.kind != .none {
            if depth == parentCapacity {
                let bigger = UnsafeMutablePointer<Frame>.allocate(capacity: parentCapacity * 2)
                bigger.moveInitialize(from: parents, count: depth)
                parents.deallocate()
                parents = bigger
                parentCapacity *= 2
            }
            (parents + depth).initialize(to: top)
            depth &+= 1
        }
        top = f
    }

    // MARK: records

    /// Starts a record: a text title line, or a JSON object with `type` and `name` first.
    public mutating func beginRecord(type: String, title: String) {
        switch format {
        case .text:
            out.utf8(title)
            push(Frame(kind: .object, indent: 1, count: 0))
        case .json:
            out.raw("{\"type\":")
            out.jsonString(type)
            out.raw(",\"name\":")
            out.jsonString(title)
            push(Frame(kind: .object, indent: 1, count: 1))
        }
    }

    /// Starts a record whose text title is already written (by the caller, into `out`),
    /// or a JSON object with no leading keys.
    public mutating func beginRecord() {
        if format == .json { out.byte(UInt8(ascii: "{")) }
        push(Frame(kind: .object, indent: 1, count: 0))
    }

    /// Continues a record whose opening and first fields the caller wrote into ``out``
    /// itself (JSON: `{` and at least one key; the next field gets its comma).
    public mutating func beginRecordContinuing() {
        push(Frame(kind: .object, indent: 1, count: format == .json ? 1 : 0))
    }

    /// Writes fields into an object a caller writing ``out`` by hand has opened (JSON: its
    /// `{` and the first `fields` fields are in `out`): text fields at indent level `indent`
    /// (two spaces each). ``leaveObject()`` hands the line back.
    public mutating func enterObject(indent: Int, fields: Int) {
        push(Frame(kind: .object, indent: indent, count: fields))
    }

    /// Leaves the object ``enterObject(indent:fields:)`` entered, writing nothing: the
    /// caller closes it.
    public mutating func leaveObject() {
        if depth > 0 {
            depth &-= 1
            top = (parents + depth).move()
        } else {
            top = Frame(kind: .none, indent: 0, count: 0)
        }
    }

    /// Ends the record and its line.
    public mutating func endRecord() {
        top = Frame(kind: .none, indent: 0, count: 0)
        depth = 0
        if format == .json { out.byte(UInt8(ascii: "}")) }
        out.byte(UInt8(ascii: "\n"))
    }

    // MARK: the sink

    /// Writes what comes before a value: separator, indentation and name.
    private mutating func prefix(_ name: FieldName) {
        let f = top
        guard f.kind != .none else { return }
        top.count = f.count &+ 1
        switch format {
        case .json:
            if f.kind == .object || f.kind == .inlineObject {
                // Names are this library's snake_case identifiers: nothing to escape.
                out.jsonKey(name.utf8, comma: f.count > 0)
            } else if f.count > 0 {
                out.byte(UInt8(ascii: ","))
            }
        case .text:
            switch f.kind {
            case .none: break
            case .object:
                out.textFieldStart(indent: 2 &* f.indent, name: name.utf8)
            case .list:
                out.newlineIndent(2 &* f.indent &+ 2)
                out.byte(UInt8(ascii: "["))
                out.decimal(UInt64(f.count))
                out.raw("] ")
            case .inlineObject:
                if f.count > 0 { out.raw(", ") }
                out.append(name.utf8)
                out.raw(": ")
            case .inlineList:
                if f.count > 0 { out.raw(", ") }
            }
        }
    }

    public mutating func uint(_ name: FieldName, _ value: UInt64) {
        prefix(name)
        out.decimal(value)
    }

    public mutating func int(_ name: FieldName, _ value: Int64) {
        prefix(name)
        out.decimal(value)
    }

    public mutating func double(_ name: FieldName, _ value: Double) {
        prefix(name)
        if format == .json && !value.isFinite { out.raw("null") } else { out.double(value) }
    }

    /// A time in seconds from nanoseconds, with the decimals it needs (no exponent, no
    /// rounding through a Double: ``OutputBuffer/seconds(nanoseconds:)``).
    public mutating func seconds(_ name: FieldName, nanoseconds: UInt64) {
        prefix(name)
        out.seconds(nanoseconds: nanoseconds)
    }

    public mutating func bool(_ name: FieldName, _ value: Bool) {
        prefix(name)
        switch format {
        case .json: if value { out.raw("true") } else { out.raw("false") }
        case .text: if value { out.raw("yes") } else { out.raw("no") }
        }
    }

    public mutating func text(_ name: FieldName, _ value: String) {
        var value = value
        value.withUTF8 { writeText(name, UnsafeRawBufferPointer($0)) }
    }

    public mutating func text(_ name: FieldName, literal value: StaticString) {
        value.withUTF8Buffer { writeText(name, UnsafeRawBufferPointer($0)) }
    }

    public mutating func text(_ name: FieldName, utf8 value: UnsafeRawBufferPointer) {
        if OutputBuffer.isValidUTF8(value) {
            writeText(name, value)
        } else {
            text(name, String(decoding: value, as: UTF8.self))
        }
    }

    /// Valid UTF-8: quoted as is in text, escaped in JSON.
    private mutating func writeText(_ name: FieldName, _ utf8: UnsafeRawBufferPointer) {
        prefix(name)
        switch format {
        case .json:
            out.jsonString(utf8)
        case .text:
            out.byte(UInt8(ascii: "\""))
            out.append(utf8)
            out.byte(UInt8(ascii: "\""))
        }
    }

    public mutating func uuid(_ name: FieldName, _ value: BluetoothUUID) {
        prefix(name)
        out.byte(UInt8(ascii: "\""))
        out.uuid(value)
        out.byte(UInt8(ascii: "\""))
    }

    public mutating func address(_ name: FieldName, _ value: BluetoothAddress) {
        prefix(name)
        out.byte(UInt8(ascii: "\""))
        out.address(value)
        out.byte(UInt8(ascii: "\""))
    }

    public mutating func bytes(_ name: FieldName, _ value: UnsafeRawBufferPointer) {
        prefix(name)
        switch format {
        case .json:
            out.byte(UInt8(ascii: "\""))
            out.hexLower(value)
            out.byte(UInt8(ascii: "\""))
        case .text:
            if value.isEmpty {
                out.raw("(empty)")
            } else {
                out.hexLower(value, separator: UInt8(ascii: " "))
                out.raw(" (")
                out.decimal(UInt64(value.count))
                out.raw(" bytes)")
            }
        }
    }

    public mutating func named(_ name: FieldName, _ value: UInt64, _ label: String) {
        var label = label
        label.withUTF8 { writeNamed(name, value, UnsafeRawBufferPointer($0)) }
    }

    public mutating func named(_ name: FieldName, _ value: UInt64, literal label: StaticString) {
        if label.hasPointerRepresentation {
            writeNamed(name, value, UnsafeRawBufferPointer(start: label.utf8Start, count: label.utf8CodeUnitCount),
                       static: true)
        } else {
            label.withUTF8Buffer { writeNamed(name, value, UnsafeRawBufferPointer($0)) }
        }
    }

    public mutating func named(_ name: FieldName, _ value: UInt64, utf8 label: UnsafeRawBufferPointer) {
        writeNamed(name, value, label)
    }

    /// Rendered `{"value":V,"name":"LABEL"}` of literal labels, by label address and value:
    /// the same few (AD types, company names, codes) come on every line.
    private struct CachedNamed {
        var label: UnsafeRawPointer?
        var value: UInt64 = 0
        var length = 0
    }
    private static let cacheSlots = 64
    private static let cacheSlotSize = 128
    private var namedCache: [CachedNamed] = []
    private var namedCacheBytes: UnsafeMutableRawPointer?

    /// Writes the JSON value of a named number with a label in static storage, from the
    /// cache when it was written before.
    private mutating func cachedNamedJSON(_ value: UInt64, _ label: UnsafeRawBufferPointer) {
        guard let address = label.baseAddress, label.count <= Self.cacheSlotSize - 40 else {
            writeNamedJSON(value, label)
            return
        }
        if namedCache.isEmpty {
            namedCache = Array(repeating: CachedNamed(), count: Self.cacheSlots)
            namedCacheBytes = UnsafeMutableRawPointer.allocate(byteCount: Self.cacheSlots * Self.cacheSlotSize, alignment: 16)
        }
        guard let bytes = namedCacheBytes else { writeNamedJSON(value, label); return }
        let key = UInt(bitPattern: address) ^ UInt(truncatingIfNeeded: value &* 0x9E37_79B9_7F4A_7C15)
        let slot = Int((key ^ (key >> 17)) & UInt(Self.cacheSlots - 1))
        let fragment = bytes + slot * Self.cacheSlotSize
        let entry = namedCache[slot]
        if entry.label == address && entry.value == value {
            out.append(UnsafeRawBufferPointer(start: fragment, count: entry.length))
            return
        }
        let start = out.count
        writeNamedJSON(value, label)
        let length = out.count - start
        guard length <= Self.cacheSlotSize else { return }
        out.withBytes { all in
            if let b = all.baseAddress { fragment.copyMemory(from: b + start, byteCount: length) }
        }
        namedCache[slot] = CachedNamed(label: address, value: value, length: length)
    }

    private mutating func writeNamedJSON(_ value: UInt64, _ label: UnsafeRawBufferPointer) {
        out.raw("{\"value\":")
        out.decimal(value)
        out.raw(",\"name\":")
        out.jsonString(label)
        out.byte(UInt8(ascii: "}"))
    }

    private mutating func writeNamed(_ name: FieldName, _ value: UInt64, _ label: UnsafeRawBufferPointer,
                                     static isStatic: Bool = false) {
        prefix(name)
        switch format {
        case .json:
            if isStatic { cachedNamedJSON(value, label) } else { writeNamedJSON(value, label) }
        case .text:
            out.append(label)
            out.parenthesizedHex(value)
        }
    }

    public mutating func beginObject(_ name: FieldName) {
        let parent = top
        guard parent.kind != .none else { return }
        switch format {
        case .json:
            prefix(name)
            out.byte(UInt8(ascii: "{"))
            push(Frame(kind: .object, indent: 0, count: 0))
        case .text:
            switch parent.kind {
            case .object:
                top.count &+= 1
                out.newlineIndent(2 &* parent.indent)
                out.append(name.utf8)
                out.byte(UInt8(ascii: ":"))
                push(Frame(kind: .object, indent: parent.indent + 1, count: 0))
            case .list:
                top.count &+= 1
                out.newlineIndent(2 &* parent.indent &+ 2)
                out.byte(UInt8(ascii: "["))
                out.decimal(UInt64(parent.count))
                out.byte(UInt8(ascii: "]"))
                push(Frame(kind: .object, indent: parent.indent + 2, count: 0))
            case .inlineObject, .inlineList, .none:
                prefix(name)
                out.byte(UInt8(ascii: "{"))
                push(Frame(kind: .inlineObject, indent: 0, count: 0))
            }
        }
    }

    public mutating func beginList(_ name: FieldName, count: Int) {
        let parent = top
        guard parent.kind != .none else { return }
        switch format {
        case .json:
            prefix(name)
            out.byte(UInt8(ascii: "["))
            push(Frame(kind: .list, indent: 0, count: 0))
        case .text:
            switch parent.kind {
            case .object:
                top.count &+= 1
                out.newlineIndent(2 &* parent.indent)
                out.append(name.utf8)
                out.raw(": [")
                out.decimal(UInt64(count))
                out.byte(UInt8(ascii: "]"))
                push(Frame(kind: .list, indent: parent.indent, count: 0))
            case .list, .inlineObject, .inlineList, .none:
                prefix(name)
                out.byte(UInt8(ascii: "["))
                push(Frame(kind: .inlineList, indent: 0, count: 0))
            }
        }
    }

    public mutating func end() {
        let f = top
        guard f.kind != .none else { return }
        if depth > 0 {
            depth &-= 1
            top = (parents + depth).move()
        } else {
            top = Frame(kind: .none, indent: 0, count: 0)
        }
        switch format {
        case .json:
            out.byte(f.kind == .list ? UInt8(ascii: "]") : UInt8(ascii: "}"))
        case .text:
            switch f.kind {
            case .inlineObject: out.byte(UInt8(ascii: "}"))
            case .inlineList: out.byte(UInt8(ascii: "]"))
            case .object, .list, .none: break
            }
        }
    }
}
