/// A Security Manager Protocol command code. Core Vol 3 Part H §3.3 Table 3.1. Open set.
public struct SMPCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// SMP Pairing Request (0x01).
    public static let pairingRequest = SMPCode(rawValue: 0x01)
    /// SMP Pairing Response (0x02).
    public static let pairingResponse = SMPCode(rawValue: 0x02)
    /// SMP Pairing Confirm (0x03).
    public static let pairingConfirm = SMPCode(rawValue: 0x03)
    /// SMP Pairing Random (0x04).
    public static let pairingRandom = SMPCode(rawValue: 0x04)
    /// SMP Pairing Failed (0x05).
    public static let pairingFailed = SMPCode(rawValue: 0x05)
    /// SMP Encryption Information (0x06).
    public static let encryptionInformation = SMPCode(rawValue: 0x06)
    /// SMP Central Identification (0x07).
    public static let centralIdentification = SMPCode(rawValue: 0x07)
    /// SMP Identity Information (0x08).
    public static let identityInformation = SMPCode(rawValue: 0x08)
    /// SMP Identity Address Information (0x09).
    public static let identityAddressInformation = SMPCode(rawValue: 0x09)
    /// SMP Signing Information (0x0A).
    public static let signingInformation = SMPCode(rawValue: 0x0A)
    /// SMP Security Request (0x0B).
    public static let securityRequest = SMPCode(rawValue: 0x0B)
    /// SMP Pairing Public Key (0x0C).
    public static let pairingPublicKey = SMPCode(rawValue: 0x0C)
    /// SMP Pairing DH Key Check (0x0D).
    public static let pairingDHKeyCheck = SMPCode(rawValue: 0x0D)
    /// SMP Pairing Keypress Notification (0x0E).
    public static let pairingKeypressNotification = SMPCode(rawValue: 0x0E)

    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0x01: "Pairing Request"
        case 0x02: "Pairing Response"
        case 0x03: "Pairing Confirm"
        case 0x04: "Pairing Random"
        case 0x05: "Pairing Failed"
        case 0x06: "Encryption Information"
        case 0x07: "Central Identification"
        case 0x08: "Identity Information"
        case 0x09: "Identity Address Information"
        case 0x0A: "Signing Information"
        case 0x0B: "Security Request"
        case 0x0C: "Pairing Public Key"
        case 0x0D: "Pairing DHKey Check"
        case 0x0E: "Pairing Keypress Notification"
        default: nil
        }
    }

    public var description: String { name.map { "SMP \($0)" } ?? "SMP code 0x\(Hex.pad(rawValue, 2))" }
}

/// IO Capability. Core Vol 3 Part H §3.5.1 Table 3.4. Open set.
public struct SMPIOCapability: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Display Only (0x00).
    public static let displayOnly = SMPIOCapability(rawValue: 0x00)
    /// Display Yes/No (0x01).
    public static let displayYesNo = SMPIOCapability(rawValue: 0x01)
    /// Keyboard Only (0x02).
    public static let keyboardOnly = SMPIOCapability(rawValue: 0x02)
    /// No Input No Output (0x03).
    public static let noInputNoOutput = SMPIOCapability(rawValue: 0x03)
    /// Keyboard Display (0x04).
    public static let keyboardDisplay = SMPIOCapability(rawValue: 0x04)
    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0: "DisplayOnly"
        case 1: "DisplayYesNo"
        case 2: "KeyboardOnly"
        case 3: "NoInputNoOutput"
        case 4: "KeyboardDisplay"
        default: nil
        }
    }
}

/// OOB Data Flag. Core Vol 3 Part H §3.5.1 Table 3.5. Open set.
public struct SMPOOBDataFlag: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Not Present (0x00).
    public static let notPresent = SMPOOBDataFlag(rawValue: 0x00)
    /// Present (0x01).
    public static let present = SMPOOBDataFlag(rawValue: 0x01)
    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0: "OOB Authentication data not present"
        case 1: "OOB Authentication data from remote device present"
        default: nil
        }
    }
}

/// AuthReq: Bonding_Flags (bits 0-1), MITM (2), SC (3), Keypress (4), CT2 (5).
/// Core Vol 3 Part H §3.5.1 Figure 3.3. Reserved bits are kept as received.
public struct SMPAuthenticationRequirements: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bonding_Flags = 0b01.
    public static let bonding = SMPAuthenticationRequirements(rawValue: 0x01)
    /// MITM (0x04).
    public static let mitm = SMPAuthenticationRequirements(rawValue: 0x04)
    /// Secure Connections (0x08).
    public static let secureConnections = SMPAuthenticationRequirements(rawValue: 0x08)
    /// Keypress (0x10).
    public static let keypress = SMPAuthenticationRequirements(rawValue: 0x10)
    /// CT2 (0x20).
    public static let ct2 = SMPAuthenticationRequirements(rawValue: 0x20)

    /// The two-bit Bonding_Flags field: 0b00 No Bonding, 0b01 Bonding, others reserved.
    @inlinable public var bondingFlags: UInt8 {
        get { rawValue & 0x03 }
        set { rawValue = rawValue & ~0x03 | newValue & 0x03 }
    }

    var fieldValue: FieldValue {
        var o: [Field] = [
            Field("bonding_flags", .named(UInt64(bondingFlags),
                                          bondingFlags == 0 ? "No Bonding" : bondingFlags == 1 ? "Bonding" : "Reserved")),
            Field("mitm", .bool(contains(.mitm))),
            Field("sc", .bool(contains(.secureConnections))),
            Field("keypress", .bool(contains(.keypress))),
            Field("ct2", .bool(contains(.ct2))),
        ]
        if rawValue & 0xC0 != 0 { o.append(Field("rfu", .uint(UInt64(rawValue >> 6)))) }
        return .object([Field("value", .uint(UInt64(rawValue)))] + o)
    }
}

/// Initiator / Responder Key Distribution: EncKey (bit 0), IdKey (1), SignKey (2), LinkKey (3).
/// Core Vol 3 Part H §3.6.1 Figure 3.11.
public struct SMPKeyDistribution: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Encryption Key (0x01).
    public static let encryptionKey = SMPKeyDistribution(rawValue: 0x01)
    /// Identity Key (0x02).
    public static let identityKey = SMPKeyDistribution(rawValue: 0x02)
    /// Signing Key (0x04).
    public static let signingKey = SMPKeyDistribution(rawValue: 0x04)
    /// Link Key (0x08).
    public static let linkKey = SMPKeyDistribution(rawValue: 0x08)

    var fieldValue: FieldValue {
        var names: [FieldValue] = []
        if contains(.encryptionKey) { names.append(.text("EncKey")) }
        if contains(.identityKey) { names.append(.text("IdKey")) }
        if contains(.signingKey) { names.append(.text("SignKey")) }
        if contains(.linkKey) { names.append(.text("LinkKey")) }
        return .object([Field("value", .uint(UInt64(rawValue))), Field("keys", .list(names))])
    }
}

/// The parameters shared by Pairing Request and Pairing Response.
/// Core Vol 3 Part H §3.5.1-3.5.2.
public struct SMPPairingParameters: Hashable, Sendable {
    /// IO_Capability.
    public var ioCapability: SMPIOCapability
    /// OOB data flag.
    public var oobDataFlag: SMPOOBDataFlag
    /// AuthReq: bonding, MITM, SC, keypress, CT2.
    public var authenticationRequirements: SMPAuthenticationRequirements
    /// 7...16 bytes; other values are rejected when parsing and encoding.
    public var maximumEncryptionKeySize: UInt8
    /// Keys the initiator distributes.
    public var initiatorKeyDistribution: SMPKeyDistribution
    /// Keys the responder distributes.
    public var responderKeyDistribution: SMPKeyDistribution

    /// The key sizes allowed (7...16 bytes).
    public static let encryptionKeySizeRange: ClosedRange<UInt8> = 7 ... 16

    /// A value with these fields.
    @inlinable
    public init(ioCapability: SMPIOCapability, oobDataFlag: SMPOOBDataFlag = .notPresent,
                authenticationRequirements: SMPAuthenticationRequirements, maximumEncryptionKeySize: UInt8 = 16,
                initiatorKeyDistribution: SMPKeyDistribution, responderKeyDistribution: SMPKeyDistribution) {
        self.ioCapability = ioCapability
        self.oobDataFlag = oobDataFlag
        self.authenticationRequirements = authenticationRequirements
        self.maximumEncryptionKeySize = maximumEncryptionKeySize
        self.initiatorKeyDistribution = initiatorKeyDistribution
        self.responderKeyDistribution = responderKeyDistribution
    }
}

/// Reason of Pairing Failed. Core Vol 3 Part H §3.5.5 Table 3.7. Open set.
public struct SMPPairingFailedReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible, Error {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Passkey Entry Failed (0x01).
    public static let passkeyEntryFailed = Self(rawValue: 0x01)
    /// OOB Not Available (0x02).
    public static let oobNotAvailable = Self(rawValue: 0x02)
    /// Authentication Requirements (0x03).
    public static let authenticationRequirements = Self(rawValue: 0x03)
    /// Confirm Value Failed (0x04).
    public static let confirmValueFailed = Self(rawValue: 0x04)
    /// Pairing Not Supported (0x05).
    public static let pairingNotSupported = Self(rawValue: 0x05)
    /// Encryption Key Size (0x06).
    public static let encryptionKeySize = Self(rawValue: 0x06)
    /// Command Not Supported (0x07).
    public static let commandNotSupported = Self(rawValue: 0x07)
    /// Unspecified Reason (0x08).
    public static let unspecifiedReason = Self(rawValue: 0x08)
    /// Repeated Attempts (0x09).
    public static let repeatedAttempts = Self(rawValue: 0x09)
    /// Invalid Parameters (0x0A).
    public static let invalidParameters = Self(rawValue: 0x0A)
    /// DH Key Check Failed (0x0B).
    public static let dhKeyCheckFailed = Self(rawValue: 0x0B)
    /// Numeric Comparison Failed (0x0C).
    public static let numericComparisonFailed = Self(rawValue: 0x0C)
    /// BR/EDR Pairing In Progress (0x0D).
    public static let brEdrPairingInProgress = Self(rawValue: 0x0D)
    /// Cross Transport Key Derivation Not Allowed (0x0E).
    public static let crossTransportKeyDerivationNotAllowed = Self(rawValue: 0x0E)
    /// Key Rejected (0x0F).
    public static let keyRejected = Self(rawValue: 0x0F)
    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0x01: "Passkey Entry Failed"
        case 0x02: "OOB Not Available"
        case 0x03: "Authentication Requirements"
        case 0x04: "Confirm Value Failed"
        case 0x05: "Pairing Not Supported"
        case 0x06: "Encryption Key Size"
        case 0x07: "Command Not Supported"
        case 0x08: "Unspecified Reason"
        case 0x09: "Repeated Attempts"
        case 0x0A: "Invalid Parameters"
        case 0x0B: "DHKey Check Failed"
        case 0x0C: "Numeric Comparison Failed"
        case 0x0D: "BR/EDR pairing in progress"
        case 0x0E: "Cross-transport Key Derivation/Generation not allowed"
        case 0x0F: "Key Rejected"
        default: nil
        }
    }
    public var description: String { name ?? "SMP reason 0x\(Hex.pad(rawValue, 2))" }
}

/// Notification Type of Pairing Keypress Notification. Core Vol 3 Part H §3.5.8 Table 3.8. Open set.
public struct SMPKeypressNotificationType: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Passkey Entry Started (0).
    public static let passkeyEntryStarted = Self(rawValue: 0)
    /// Passkey Digit Entered (1).
    public static let passkeyDigitEntered = Self(rawValue: 1)
    /// Passkey Digit Erased (2).
    public static let passkeyDigitErased = Self(rawValue: 2)
    /// Passkey Cleared (3).
    public static let passkeyCleared = Self(rawValue: 3)
    /// Passkey Entry Completed (4).
    public static let passkeyEntryCompleted = Self(rawValue: 4)
    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0: "Passkey entry started"
        case 1: "Passkey digit entered"
        case 2: "Passkey digit erased"
        case 3: "Passkey cleared"
        case 4: "Passkey entry completed"
        default: nil
        }
    }
}

/// A 256-bit little-endian value (a P-256 public key coordinate), stored inline.
public struct SMPUInt256: Hashable, Sendable {
    /// Bytes 0-15 on the wire (least significant).
    public var low: UInt128
    /// Bytes 16-31 on the wire.
    public var high: UInt128
    /// A value with these fields.
    @inlinable public init(low: UInt128, high: UInt128) {
        self.low = low
        self.high = high
    }
    /// From 32 bytes in wire (little-endian) order; nil for another count.
    public init?(wireBytes b: [UInt8]) {
        guard b.count == 32 else { return nil }
        low = SMP.uint128(Array(b[0 ..< 16]))
        high = SMP.uint128(Array(b[16 ..< 32]))
    }
    /// The 32 bytes in wire (little-endian) order.
    public var wireBytes: [UInt8] { SMP.bytes(low) + SMP.bytes(high) }
}

/// SMP helpers and sizes. Core Vol 3 Part H §3.
public enum SMP {
    /// LE Security Manager MTU (23; 65 with LE Secure Connections). Core Vol 3 Part H §3.2.
    public static let defaultMTU = 23
    /// SMP's MTU with LE Secure Connections (65).
    public static let secureConnectionsMTU = 65

    @inlinable static func read128(_ r: inout ByteReader, _ field: StaticString) throws(WireError) -> UInt128 {
        let lo = try r.u64(field)
        let hi = try r.u64(field)
        return UInt128(hi) << 64 | UInt128(lo)
    }

    @inlinable static func write128(_ v: UInt128, _ w: inout ByteWriter) throws(WireError) {
        try w.u64(UInt64(truncatingIfNeeded: v))
        try w.u64(UInt64(truncatingIfNeeded: v >> 64))
    }

    /// A 128-bit value's 16 bytes in wire (little-endian) order.
    public static func bytes(_ v: UInt128) -> [UInt8] {
        (0 ..< 16).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) }
    }

    /// A 128-bit value from 16 bytes in wire (little-endian) order (missing bytes are 0).
    public static func uint128(_ b: [UInt8]) -> UInt128 {
        var v: UInt128 = 0
        for (i, x) in b.prefix(16).enumerated() { v |= UInt128(x) << (8 * i) }
        return v
    }
}

/// A Security Manager Protocol PDU, from an L2CAP frame on CID 0x0006.
/// Core Vol 3 Part H §3.3-3.6. Every known command has a fixed length, enforced exactly.
/// Keys and values are 128-bit integers read little-endian (as sent).
/// `.unknown` holds a view valid while the caller's buffer is alive.
public enum SMPPDU {
    case pairingRequest(SMPPairingParameters)
    case pairingResponse(SMPPairingParameters)
    case pairingConfirm(confirmValue: UInt128)
    case pairingRandom(randomValue: UInt128)
    case pairingFailed(reason: SMPPairingFailedReason)
    case encryptionInformation(longTermKey: UInt128)
    case centralIdentification(ediv: UInt16, rand: UInt64)
    case identityInformation(identityResolvingKey: UInt128)
    /// Address type 0x00 public, 0x01 random static; kept as received.
    case identityAddressInformation(LEAddress)
    case signingInformation(signatureKey: UInt128)
    case securityRequest(SMPAuthenticationRequirements)
    case pairingPublicKey(x: SMPUInt256, y: SMPUInt256)
    case pairingDHKeyCheck(UInt128)
    case pairingKeypressNotification(SMPKeypressNotificationType)
    case unknown(code: SMPCode, data: UnsafeRawBufferPointer)

    /// Parses one SMP PDU filling `bytes` exactly.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        let code = SMPCode(rawValue: try r.u8("SMP code"))
        switch code {
        case .pairingRequest, .pairingResponse:
            let io = SMPIOCapability(rawValue: try r.u8("IO capability"))
            let oob = SMPOOBDataFlag(rawValue: try r.u8("OOB data flag"))
            let auth = SMPAuthenticationRequirements(rawValue: try r.u8("AuthReq"))
            let keySizeOffset = r.offset
            let keySize = try r.u8("maximum encryption key size")
            let ikd = SMPKeyDistribution(rawValue: try r.u8("initiator key distribution"))
            let rkd = SMPKeyDistribution(rawValue: try r.u8("responder key distribution"))
            try r.expectEnd()
            guard SMPPairingParameters.encryptionKeySizeRange.contains(keySize) else {
                throw WireError(.invalidValue, at: keySizeOffset, "maximum encryption key size must be 7 to 16")
            }
            let p = SMPPairingParameters(
                ioCapability: io, oobDataFlag: oob, authenticationRequirements: auth, maximumEncryptionKeySize: keySize,
                initiatorKeyDistribution: ikd, responderKeyDistribution: rkd)
            self = code == .pairingRequest ? .pairingRequest(p) : .pairingResponse(p)
        case .pairingConfirm:
            self = .pairingConfirm(confirmValue: try SMP.read128(&r, "confirm value"))
        case .pairingRandom:
            self = .pairingRandom(randomValue: try SMP.read128(&r, "random value"))
        case .pairingFailed:
            self = .pairingFailed(reason: SMPPairingFailedReason(rawValue: try r.u8("reason")))
        case .encryptionInformation:
            self = .encryptionInformation(longTermKey: try SMP.read128(&r, "LTK"))
        case .centralIdentification:
            let ediv = try r.u16("EDIV")
            self = .centralIdentification(ediv: ediv, rand: try r.u64("Rand"))
        case .identityInformation:
            self = .identityInformation(identityResolvingKey: try SMP.read128(&r, "IRK"))
        case .identityAddressInformation:
            let type = LEAddressType(rawValue: try r.u8("address type"))
            let address = try BluetoothAddress.read(&r)
            self = .identityAddressInformation(LEAddress(address, type: type))
        case .signingInformation:
            self = .signingInformation(signatureKey: try SMP.read128(&r, "CSRK"))
        case .securityRequest:
            self = .securityRequest(SMPAuthenticationRequirements(rawValue: try r.u8("AuthReq")))
        case .pairingPublicKey:
            let xl = try SMP.read128(&r, "public key X"), xh = try SMP.read128(&r, "public key X")
            let yl = try SMP.read128(&r, "public key Y"), yh = try SMP.read128(&r, "public key Y")
            self = .pairingPublicKey(x: SMPUInt256(low: xl, high: xh), y: SMPUInt256(low: yl, high: yh))
        case .pairingDHKeyCheck:
            self = .pairingDHKeyCheck(try SMP.read128(&r, "DHKey check"))
        case .pairingKeypressNotification:
            self = .pairingKeypressNotification(SMPKeypressNotificationType(rawValue: try r.u8("notification type")))
        default:
            self = .unknown(code: code, data: r.rest())
        }
        try r.expectEnd()
    }

    /// The PDU's code.
    public var code: SMPCode {
        switch self {
        case .pairingRequest: .pairingRequest
        case .pairingResponse: .pairingResponse
        case .pairingConfirm: .pairingConfirm
        case .pairingRandom: .pairingRandom
        case .pairingFailed: .pairingFailed
        case .encryptionInformation: .encryptionInformation
        case .centralIdentification: .centralIdentification
        case .identityInformation: .identityInformation
        case .identityAddressInformation: .identityAddressInformation
        case .signingInformation: .signingInformation
        case .securityRequest: .securityRequest
        case .pairingPublicKey: .pairingPublicKey
        case .pairingDHKeyCheck: .pairingDHKeyCheck
        case .pairingKeypressNotification: .pairingKeypressNotification
        case .unknown(let code, _): code
        }
    }
}

extension SMPPDU: WireEncodable {
    public var encodedLength: Int {
        switch self {
        case .pairingRequest, .pairingResponse: 7
        case .pairingConfirm, .pairingRandom, .encryptionInformation, .identityInformation,
             .signingInformation, .pairingDHKeyCheck: 17
        case .pairingFailed, .securityRequest, .pairingKeypressNotification: 2
        case .centralIdentification: 11
        case .identityAddressInformation: 8
        case .pairingPublicKey: 65
        case .unknown(_, let data): 1 + data.count
        }
    }

    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(code.rawValue)
        switch self {
        case .pairingRequest(let p), .pairingResponse(let p):
            guard SMPPairingParameters.encryptionKeySizeRange.contains(p.maximumEncryptionKeySize) else {
                throw WireError(.valueOutOfRange, at: w.count, "maximum encryption key size must be 7 to 16")
            }
            try w.u8(p.ioCapability.rawValue)
            try w.u8(p.oobDataFlag.rawValue)
            try w.u8(p.authenticationRequirements.rawValue)
            try w.u8(p.maximumEncryptionKeySize)
            try w.u8(p.initiatorKeyDistribution.rawValue)
            try w.u8(p.responderKeyDistribution.rawValue)
        case .pairingConfirm(let v), .pairingRandom(let v), .encryptionInformation(let v),
             .identityInformation(let v), .signingInformation(let v), .pairingDHKeyCheck(let v):
            try SMP.write128(v, &w)
        case .pairingFailed(let reason):
            try w.u8(reason.rawValue)
        case .centralIdentification(let ediv, let rand):
            try w.u16(ediv)
            try w.u64(rand)
        case .identityAddressInformation(let a):
            try w.u8(a.type.rawValue)
            try a.address.write(&w)
        case .securityRequest(let auth):
            try w.u8(auth.rawValue)
        case .pairingPublicKey(let x, let y):
            try SMP.write128(x.low, &w)
            try SMP.write128(x.high, &w)
            try SMP.write128(y.low, &w)
            try SMP.write128(y.high, &w)
        case .pairingKeypressNotification(let t):
            try w.u8(t.rawValue)
        case .unknown(_, let data):
            try w.bytes(data)
        }
    }
}

extension SMPPDU: FieldDescribable {
    public var fieldTitle: String { code.description }

    /// Keys are printed as hex in wire (little-endian) order.
    public var fields: [Field] {
        var f: [Field] = [Field("code", .named(UInt64(code.rawValue), code.name ?? "Unknown"))]
        func key(_ v: UInt128) -> FieldValue { .bytes(SMP.bytes(v)) }
        func named(_ v: UInt8, _ n: String?) -> FieldValue { n.map { .named(UInt64(v), $0) } ?? .uint(UInt64(v)) }
        switch self {
        case .pairingRequest(let p), .pairingResponse(let p):
            f.append(Field("io_capability", named(p.ioCapability.rawValue, p.ioCapability.name)))
            f.append(Field("oob_data_flag", named(p.oobDataFlag.rawValue, p.oobDataFlag.name)))
            f.append(Field("auth_req", p.authenticationRequirements.fieldValue))
            f.append(Field("maximum_encryption_key_size", .uint(UInt64(p.maximumEncryptionKeySize))))
            f.append(Field("initiator_key_distribution", p.initiatorKeyDistribution.fieldValue))
            f.append(Field("responder_key_distribution", p.responderKeyDistribution.fieldValue))
        case .pairingConfirm(let v): f.append(Field("confirm_value", key(v)))
        case .pairingRandom(let v): f.append(Field("random_value", key(v)))
        case .pairingFailed(let reason): f.append(Field("reason", named(reason.rawValue, reason.name)))
        case .encryptionInformation(let v): f.append(Field("long_term_key", key(v)))
        case .centralIdentification(let ediv, let rand):
            f.append(Field("ediv", .uint(UInt64(ediv))))
            f.append(Field("rand", .bytes((0 ..< 8).map { UInt8(truncatingIfNeeded: rand >> (8 * UInt64($0))) })))
        case .identityInformation(let v): f.append(Field("identity_resolving_key", key(v)))
        case .identityAddressInformation(let a):
            f.append(Field("addr_type", .named(UInt64(a.type.rawValue), a.type.description)))
            f.append(Field("bd_addr", .text(a.address.description)))
        case .signingInformation(let v): f.append(Field("signature_key", key(v)))
        case .securityRequest(let auth): f.append(Field("auth_req", auth.fieldValue))
        case .pairingPublicKey(let x, let y):
            f.append(Field("public_key_x", .bytes(x.wireBytes)))
            f.append(Field("public_key_y", .bytes(y.wireBytes)))
        case .pairingDHKeyCheck(let v): f.append(Field("dhkey_check", key(v)))
        case .pairingKeypressNotification(let t): f.append(Field("notification_type", named(t.rawValue, t.name)))
        case .unknown(_, let data): f.append(Field("data", .bytes(data)))
        }
        return f
    }
}
