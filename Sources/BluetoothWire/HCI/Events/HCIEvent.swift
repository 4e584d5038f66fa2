/// An HCI event packet (Core Vol 4 Part E §5.4.4, §7.7), parsed without copying.
///
/// Views inside (`returnParameters`, advertising data, `.unknown` bytes) point into the
/// caller's buffer and are valid only while that buffer is alive.
public enum HCIEvent {
    case commandComplete(HCICommandComplete)
    case commandStatus(HCICommandStatus)
    case disconnectionComplete(HCIDisconnectionComplete)
    /// HCI_Encryption_Change v1 (0x08) or v2 (0x59, with key size).
    case encryptionChange(HCIEncryptionChange)
    case encryptionKeyRefreshComplete(HCIEncryptionKeyRefreshComplete)
    case numberOfCompletedPackets(HCINumberOfCompletedPackets)
    case hardwareError(HCIHardwareError)
    case dataBufferOverflow(HCIDataBufferOverflow)
    case readRemoteVersionInformationComplete(HCIReadRemoteVersionInformationComplete)
    case leMeta(LEMetaEvent)
    /// Any other event code: the code and its parameters, never an error.
    case unknown(HCIEventCode, UnsafeRawBufferPointer)

    /// Parses an event packet without the H4 indicator: Event_Code, Parameter_Total_Length,
    /// parameters. The length must match the bytes present exactly (`.invalidLength`).
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var (code, p) = try Self.parameters(of: bytes)
        switch code {
        case 0x3E: self = .leMeta(try LEMetaEvent(parameters: &p))
        case 0x0E: self = .commandComplete(try HCICommandComplete(parameters: &p))
        case 0x0F: self = .commandStatus(try HCICommandStatus(parameters: &p))
        case 0x13: self = .numberOfCompletedPackets(try HCINumberOfCompletedPackets(parameters: &p))
        case 0x05: self = .disconnectionComplete(try HCIDisconnectionComplete(parameters: &p))
        case 0x08: self = .encryptionChange(try HCIEncryptionChange(parameters: &p, v2: false))
        case 0x59: self = .encryptionChange(try HCIEncryptionChange(parameters: &p, v2: true))
        case 0x30: self = .encryptionKeyRefreshComplete(try HCIEncryptionKeyRefreshComplete(parameters: &p))
        case 0x10: self = .hardwareError(try HCIHardwareError(parameters: &p))
        case 0x1A: self = .dataBufferOverflow(try HCIDataBufferOverflow(parameters: &p))
        case 0x0C: self = .readRemoteVersionInformationComplete(try HCIReadRemoteVersionInformationComplete(parameters: &p))
        default: self = .unknown(HCIEventCode(rawValue: code), p.rest())
        }
        try p.expectEnd("unexpected bytes after the event parameters")
    }

    /// The LE Advertising Report event in `bytes` (an event packet, as for
    /// ``init(parsing:)``: the same checks, the same errors), nil for any other event;
    /// without the enums around it, as most of a scanning capture is these.
    @inlinable
    public static func advertisingReport(parsing bytes: UnsafeRawBufferPointer) throws(WireError) -> LEAdvertisingReportEvent? {
        guard bytes.count >= 3, bytes[0] == 0x3E, bytes[2] == 0x02 else { return nil }
        var (_, p) = try parameters(of: bytes)
        _ = try p.u8("Subevent_Code")
        let e = try LEAdvertisingReportEvent(parameters: &p)
        try p.expectEnd("unexpected bytes after the event parameters")
        return e
    }

    /// Event_Code and a reader of the parameters, whose length must match the bytes present.
    @inlinable
    static func parameters(of bytes: UnsafeRawBufferPointer) throws(WireError) -> (code: UInt8, parameters: ByteReader) {
        var r = ByteReader(bytes)
        let code = try r.u8("Event_Code")
        let length = Int(try r.u8("Parameter_Total_Length"))
        guard r.remaining == length else {
            throw WireError(.invalidLength, at: 1, "Parameter_Total_Length does not match the bytes present")
        }
        return (code, ByteReader(r.rest(), baseOffset: 2))
    }

    /// The Event_Code this event is sent with.
    public var code: HCIEventCode {
        switch self {
        case .commandComplete: .commandComplete
        case .commandStatus: .commandStatus
        case .disconnectionComplete: .disconnectionComplete
        case .encryptionChange(let e): e.eventCode
        case .encryptionKeyRefreshComplete: .encryptionKeyRefreshComplete
        case .numberOfCompletedPackets: .numberOfCompletedPackets
        case .hardwareError: .hardwareError
        case .dataBufferOverflow: .dataBufferOverflow
        case .readRemoteVersionInformationComplete: .readRemoteVersionInformationComplete
        case .leMeta: .leMeta
        case .unknown(let c, _): c
        }
    }
}

extension HCIEvent: WireEncodable {
    public var encodedLength: Int {
        switch self {
        case .commandComplete(let e): e.encodedLength
        case .commandStatus(let e): e.encodedLength
        case .disconnectionComplete(let e): e.encodedLength
        case .encryptionChange(let e): e.encodedLength
        case .encryptionKeyRefreshComplete(let e): e.encodedLength
        case .numberOfCompletedPackets(let e): e.encodedLength
        case .hardwareError(let e): e.encodedLength
        case .dataBufferOverflow(let e): e.encodedLength
        case .readRemoteVersionInformationComplete(let e): e.encodedLength
        case .leMeta(let e): e.encodedLength
        case .unknown(_, let p): 2 &+ p.count
        }
    }

    /// Re-encodes the event (views are copied from the buffer they point into).
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        switch self {
        case .commandComplete(let e): try e.encode(into: &writer)
        case .commandStatus(let e): try e.encode(into: &writer)
        case .disconnectionComplete(let e): try e.encode(into: &writer)
        case .encryptionChange(let e): try e.encode(into: &writer)
        case .encryptionKeyRefreshComplete(let e): try e.encode(into: &writer)
        case .numberOfCompletedPackets(let e): try e.encode(into: &writer)
        case .hardwareError(let e): try e.encode(into: &writer)
        case .dataBufferOverflow(let e): try e.encode(into: &writer)
        case .readRemoteVersionInformationComplete(let e): try e.encode(into: &writer)
        case .leMeta(let e): try e.encode(into: &writer)
        case .unknown(let c, let p):
            guard p.count <= 255 else {
                throw WireError(.valueOutOfRange, at: writer.count, "event parameters longer than 255 bytes")
            }
            try writer.u8(c.rawValue)
            try writer.u8(UInt8(p.count))
            try writer.bytes(p)
        }
    }
}

extension HCIEvent: FieldDescribable {
    public var fieldTitle: String {
        switch self {
        case .commandComplete(let e): e.fieldTitle
        case .commandStatus(let e): e.fieldTitle
        case .disconnectionComplete(let e): e.fieldTitle
        case .encryptionChange(let e): e.fieldTitle
        case .encryptionKeyRefreshComplete(let e): e.fieldTitle
        case .numberOfCompletedPackets(let e): e.fieldTitle
        case .hardwareError(let e): e.fieldTitle
        case .dataBufferOverflow(let e): e.fieldTitle
        case .readRemoteVersionInformationComplete(let e): e.fieldTitle
        case .leMeta(let e): e.fieldTitle
        case .unknown(let c, _): c.name ?? "HCI event 0x\(Hex.pad(c.rawValue, 2))"
        }
    }

    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        switch self {
        case .commandComplete(let e): e.fields
        case .commandStatus(let e): e.fields
        case .disconnectionComplete(let e): e.fields
        case .encryptionChange(let e): e.fields
        case .encryptionKeyRefreshComplete(let e): e.fields
        case .numberOfCompletedPackets(let e): e.fields
        case .hardwareError(let e): e.fields
        case .dataBufferOverflow(let e): e.fields
        case .readRemoteVersionInformationComplete(let e): e.fields
        case .leMeta(let e): e.fields
        case .unknown(let c, let p):
            [Field("event_code", .code(c, c.name)), Field("parameters", .bytes(p))]
        }
    }

    /// Writes the event's fields; LE Meta events (advertising reports above all) and Number
    /// Of Completed Packets straight, the others from ``fields``.
    public func describeAny<S: FieldSink & ~Copyable>(into s: inout S) {
        switch self {
        case .leMeta(let e): e.describeAny(into: &s)
        case .numberOfCompletedPackets(let e): e.describe(into: &s)
        default: s.fields(fields)
        }
    }

    /// ``describeAny(into:)`` specialized for the text and JSON writer.
    public func describe(into w: inout FieldWriter) { describeAny(into: &w) }
}

// MARK: - Command Status

/// HCI_Command_Status (Core Vol 4 Part E §7.7.15).
public struct HCICommandStatus: HCIEventParameters, Hashable, Sendable {
    /// Status: `.success`, or why the command failed.
    public var status: HCIErrorCode
    /// Num_HCI_Command_Packets: commands the controller takes now.
    public var numHCICommandPackets: UInt8
    /// Command_Opcode.
    public var commandOpcode: HCIOpcode

    /// The event parameters as given.
    @inlinable
    public init(status: HCIErrorCode, numHCICommandPackets: UInt8, commandOpcode: HCIOpcode) {
        self.status = status
        self.numHCICommandPackets = numHCICommandPackets
        self.commandOpcode = commandOpcode
    }

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let s = try r.u8("Status")
        let n = try r.u8("Num_HCI_Command_Packets")
        let o = try r.u16("Command_Opcode")
        self.init(status: HCIErrorCode(rawValue: s), numHCICommandPackets: n, commandOpcode: HCIOpcode(rawValue: o))
    }

    /// The HCI event code.
    public var eventCode: HCIEventCode { .commandStatus }
    public var parameterLength: Int { 4 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u8(numHCICommandPackets)
        try w.u16(commandOpcode.rawValue)
    }

    public var fieldTitle: String { "HCI_Command_Status" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)),
         Field("num_hci_command_packets", .u(numHCICommandPackets)),
         Field("command_opcode", .opcode(commandOpcode))]
    }
}

// MARK: - Disconnection Complete

/// HCI_Disconnection_Complete (Core Vol 4 Part E §7.7.5).
public struct HCIDisconnectionComplete: HCIEventParameters, Hashable, Sendable {
    /// Status: `.success`, or why the procedure failed.
    public var status: HCIErrorCode
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// Reason: why the link went down.
    public var reason: HCIErrorCode

    /// The event parameters as given.
    @inlinable
    public init(status: HCIErrorCode, connectionHandle: UInt16, reason: HCIErrorCode) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.reason = reason
    }

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let s = try r.u8("Status")
        let h = try r.u16("Connection_Handle")
        let reason = try r.u8("Reason")
        self.init(status: HCIErrorCode(rawValue: s), connectionHandle: h, reason: HCIErrorCode(rawValue: reason))
    }

    /// The HCI event code.
    public var eventCode: HCIEventCode { .disconnectionComplete }
    public var parameterLength: Int { 4 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(connectionHandle)
        try w.u8(reason.rawValue)
    }

    public var fieldTitle: String { "HCI_Disconnection_Complete" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)),
         Field("connection_handle", .u(connectionHandle)),
         Field("reason", .status(reason))]
    }
}

// MARK: - Encryption Change

/// HCI_Encryption_Change [v1] (0x08) and [v2] (0x59) (Core Vol 4 Part E §7.7.8).
/// `encryptionKeySize` is present exactly for v2.
public struct HCIEncryptionChange: HCIEventParameters, Hashable, Sendable {
    /// Status: `.success`, or why the procedure failed.
    public var status: HCIErrorCode
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// Encryption_Enabled.
    public var encryptionEnabled: HCIEncryptionEnabled
    /// Encryption_Key_Size (v2 only); nil for v1.
    public var encryptionKeySize: UInt8?

    /// The event parameters as given.
    @inlinable
    public init(status: HCIErrorCode, connectionHandle: UInt16, encryptionEnabled: HCIEncryptionEnabled, encryptionKeySize: UInt8? = nil) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.encryptionEnabled = encryptionEnabled
        self.encryptionKeySize = encryptionKeySize
    }

    @inlinable
    init(parameters r: inout ByteReader, v2: Bool) throws(WireError) {
        let s = try r.u8("Status")
        let h = try r.u16("Connection_Handle")
        let e = try r.u8("Encryption_Enabled")
        let k: UInt8? = v2 ? try r.u8("Encryption_Key_Size") : nil
        self.init(status: HCIErrorCode(rawValue: s), connectionHandle: h,
                  encryptionEnabled: HCIEncryptionEnabled(rawValue: e), encryptionKeySize: k)
    }

    /// An HCI_Encryption_Change [v2] event (it carries the key size).
    public var isV2: Bool { encryptionKeySize != nil }
    /// The HCI event code.
    public var eventCode: HCIEventCode { isV2 ? .encryptionChangeV2 : .encryptionChangeV1 }
    public var parameterLength: Int { isV2 ? 5 : 4 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(connectionHandle)
        try w.u8(encryptionEnabled.rawValue)
        if let k = encryptionKeySize { try w.u8(k) }
    }

    public var fieldTitle: String { isV2 ? "HCI_Encryption_Change [v2]" : "HCI_Encryption_Change [v1]" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        var f = [Field("status", .status(status)),
                 Field("connection_handle", .u(connectionHandle)),
                 Field("encryption_enabled", .code(encryptionEnabled, encryptionEnabled.name))]
        if let k = encryptionKeySize { f.append(Field("encryption_key_size", .u(k))) }
        return f
    }
}

// MARK: - Encryption Key Refresh Complete

/// HCI_Encryption_Key_Refresh_Complete (Core Vol 4 Part E §7.7.39).
public struct HCIEncryptionKeyRefreshComplete: HCIEventParameters, Hashable, Sendable {
    /// Status: `.success`, or why the procedure failed.
    public var status: HCIErrorCode
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16

    /// The event parameters as given.
    @inlinable
    public init(status: HCIErrorCode, connectionHandle: UInt16) {
        self.status = status
        self.connectionHandle = connectionHandle
    }

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let s = try r.u8("Status")
        let h = try r.u16("Connection_Handle")
        self.init(status: HCIErrorCode(rawValue: s), connectionHandle: h)
    }

    /// The HCI event code.
    public var eventCode: HCIEventCode { .encryptionKeyRefreshComplete }
    public var parameterLength: Int { 3 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(connectionHandle)
    }

    public var fieldTitle: String { "HCI_Encryption_Key_Refresh_Complete" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)), Field("connection_handle", .u(connectionHandle))]
    }
}

// MARK: - Hardware Error / Data Buffer Overflow

/// HCI_Hardware_Error (Core Vol 4 Part E §7.7.16).
public struct HCIHardwareError: HCIEventParameters, Hashable, Sendable {
    /// Hardware_Code.
    public var hardwareCode: UInt8
    /// The event parameters as given.
    @inlinable public init(hardwareCode: UInt8) { self.hardwareCode = hardwareCode }
    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        self.init(hardwareCode: try r.u8("Hardware_Code"))
    }
    /// The HCI event code.
    public var eventCode: HCIEventCode { .hardwareError }
    public var parameterLength: Int { 1 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) { try w.u8(hardwareCode) }
    public var fieldTitle: String { "HCI_Hardware_Error" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { [Field("hardware_code", .u(hardwareCode))] }
}

/// HCI_Data_Buffer_Overflow (Core Vol 4 Part E §7.7.26).
public struct HCIDataBufferOverflow: HCIEventParameters, Hashable, Sendable {
    /// Link_Type.
    public var linkType: HCIOverflowLinkType
    /// The event parameters as given.
    @inlinable public init(linkType: HCIOverflowLinkType) { self.linkType = linkType }
    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        self.init(linkType: HCIOverflowLinkType(rawValue: try r.u8("Link_Type")))
    }
    /// The HCI event code.
    public var eventCode: HCIEventCode { .dataBufferOverflow }
    public var parameterLength: Int { 1 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) { try w.u8(linkType.rawValue) }
    public var fieldTitle: String { "HCI_Data_Buffer_Overflow" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { [Field("link_type", .code(linkType, linkType.name))] }
}

// MARK: - Read Remote Version Information Complete

/// HCI_Read_Remote_Version_Information_Complete (Core Vol 4 Part E §7.7.12).
public struct HCIReadRemoteVersionInformationComplete: HCIEventParameters, Hashable, Sendable {
    /// Status: `.success`, or why the procedure failed.
    public var status: HCIErrorCode
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// Version (LMP/LL version of the remote, Assigned Numbers).
    public var version: UInt8
    /// Company_Identifier of the remote controller's manufacturer.
    public var companyIdentifier: UInt16
    /// Subversion.
    public var subversion: UInt16

    /// The event parameters as given.
    @inlinable
    public init(status: HCIErrorCode, connectionHandle: UInt16, version: UInt8, companyIdentifier: UInt16, subversion: UInt16) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.version = version
        self.companyIdentifier = companyIdentifier
        self.subversion = subversion
    }

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let s = try r.u8("Status")
        let h = try r.u16("Connection_Handle")
        let v = try r.u8("Version")
        let c = try r.u16("Company_Identifier")
        let sub = try r.u16("Subversion")
        self.init(status: HCIErrorCode(rawValue: s), connectionHandle: h, version: v, companyIdentifier: c, subversion: sub)
    }

    /// The HCI event code.
    public var eventCode: HCIEventCode { .readRemoteVersionInformationComplete }
    public var parameterLength: Int { 8 }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(status.rawValue)
        try w.u16(connectionHandle)
        try w.u8(version)
        try w.u16(companyIdentifier)
        try w.u16(subversion)
    }

    public var fieldTitle: String { "HCI_Read_Remote_Version_Information_Complete" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("status", .status(status)),
         Field("connection_handle", .u(connectionHandle)),
         Field("version", .code(HCICoreVersion(rawValue: version), HCICoreVersion(rawValue: version).name)),
         Field("company_identifier", .u(companyIdentifier)),
         Field("subversion", .u(subversion))]
    }
}

/// A Bluetooth Core Specification version number as used in HCI_Version / LMP_Version /
/// Version (Assigned Numbers §2.1).
public struct HCICoreVersion: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0: "1.0b"
        case 1: "1.1"
        case 2: "1.2"
        case 3: "2.0+EDR"
        case 4: "2.1+EDR"
        case 5: "3.0+HS"
        case 6: "4.0"
        case 7: "4.1"
        case 8: "4.2"
        case 9: "5.0"
        case 10: "5.1"
        case 11: "5.2"
        case 12: "5.3"
        case 13: "5.4"
        case 14: "6.0"
        default: nil
        }
    }
    public var description: String { name.map { "Bluetooth \($0)" } ?? "version 0x\(Hex.pad(rawValue, 2))" }
}

// MARK: - Number Of Completed Packets

/// One entry of HCI_Number_Of_Completed_Packets.
public struct HCICompletedPackets: Hashable, Sendable {
    /// Connection_Handle of the link.
    public var connectionHandle: UInt16
    /// Num_Completed_Packets.
    public var numCompletedPackets: UInt16
    /// The event parameters as given.
    @inlinable
    public init(connectionHandle: UInt16, numCompletedPackets: UInt16) {
        self.connectionHandle = connectionHandle
        self.numCompletedPackets = numCompletedPackets
    }
}

/// HCI_Number_Of_Completed_Packets (Core Vol 4 Part E §7.7.19), as a view over the
/// handle/count pairs (valid while the parsed buffer is alive). Iterate with `makeIterator()`.
public struct HCINumberOfCompletedPackets: HCIEventParameters, Sequence {
    /// Num_Handles.
    public let numHandles: UInt8
    /// The Num_Handles × (Connection_Handle u16, Num_Completed_Packets u16) bytes.
    public let entryBytes: UnsafeRawBufferPointer

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let n = try r.u8("Num_Handles")
        guard r.remaining == Int(n) &* 4 else {
            throw WireError(.invalidLength, at: r.offset &- 1, "Num_Handles does not match the parameter length")
        }
        numHandles = n
        entryBytes = r.rest()
    }

    /// Allocation-free iterator over (handle, count) pairs; the parser already checked the length.
    public struct Iterator: IteratorProtocol {
        @usableFromInline var reader: ByteReader
        @inlinable init(_ bytes: UnsafeRawBufferPointer) { reader = ByteReader(bytes, baseOffset: 3) }
        @inlinable
        public mutating func next() -> HCICompletedPackets? {
            guard reader.remaining >= 4,
                  let h = try? reader.u16("Connection_Handle"),
                  let c = try? reader.u16("Num_Completed_Packets") else { return nil }
            return HCICompletedPackets(connectionHandle: h, numCompletedPackets: c)
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(entryBytes) }

    /// The HCI event code.
    public var eventCode: HCIEventCode { .numberOfCompletedPackets }
    public var parameterLength: Int { 1 &+ entryBytes.count }
    public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(numHandles)
        try w.bytes(entryBytes)
    }

    public var fieldTitle: String { "HCI_Number_Of_Completed_Packets" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { FieldTree.build { describe(into: &$0) } }

    /// Writes the fields straight (nothing built: this event is about a third of the
    /// packets of a busy connection).
    public func describe<S: FieldSink & ~Copyable>(into s: inout S) {
        s.uint("num_handles", UInt64(numHandles))
        s.beginList("handles", count: entryBytes.count / 4)
        var it = makeIterator()
        while let e = it.next() {
            s.beginObject("")
            s.uint("connection_handle", UInt64(e.connectionHandle))
            s.uint("num_completed_packets", UInt64(e.numCompletedPackets))
            s.end()
        }
        s.end()
    }

    /// An owned Number Of Completed Packets event for encoding (e.g. by a simulated controller).
    public struct Owned: HCIEventParameters, Hashable, Sendable {
        /// One entry per Connection_Handle.
        public var entries: [HCICompletedPackets]
        /// The event parameters as given.
        public init(_ entries: [HCICompletedPackets]) { self.entries = entries }
        /// The HCI event code.
        public var eventCode: HCIEventCode { .numberOfCompletedPackets }
        public var parameterLength: Int { 1 &+ entries.count &* 4 }
        public func encodeParameters(into w: inout ByteWriter) throws(WireError) {
            guard entries.count <= 63 else { throw WireError(.valueOutOfRange, at: w.count, "too many handles for one event") }
            try w.u8(UInt8(entries.count))
            for e in entries {
                try w.u16(e.connectionHandle)
                try w.u16(e.numCompletedPackets)
            }
        }
        public var fieldTitle: String { "HCI_Number_Of_Completed_Packets" }
        /// The decoded fields, for the text and JSON renderers.
        public var fields: [Field] {
            [Field("num_handles", .u(entries.count)),
             Field("handles", .list(entries.map {
                 .object([Field("connection_handle", .u($0.connectionHandle)),
                          Field("num_completed_packets", .u($0.numCompletedPackets))])
             }))]
        }
    }
}
