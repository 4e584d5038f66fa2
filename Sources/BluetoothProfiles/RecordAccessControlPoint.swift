// Record Access Control Point (0x2A52, GSS §3.187; Glucose Profile §3.6 / GLS §3.2.4).
import BluetoothWire

/// Record Access Control Point value: Op Code (u8), Operator (u8), Operand (rest).
///
/// A view: `operand` is a slice of the caller's buffer, valid only while it is alive.
/// Parsing checks the operand shape where the op code and operator define it:
/// - Number of Stored Records Response (5): a u16 count.
/// - Response Code (6): request op code (u8) + response code value (u8).
/// - Report/Delete/Report Number (1, 2, 4) with operator ≤ / ≥: filter type + one value; with
///   "within range": filter type + two values (values u16 for the sequence-number filter,
///   Date Time for user facing time; an unknown filter type keeps its bytes unchecked);
///   with null/all/first/last: no operand. Abort (3): no operand.
/// Unknown op codes and operators keep their operand as raw bytes.
public struct RecordAccessControlPoint: WireEncodable {
    /// The characteristic's UUID, 0x2A52.
    public static let uuid = BluetoothUUID(0x2A52)

    /// One line for an owned value, as ``summary`` says it for a parsed one.
    public static func summary(of value: Owned) -> String {
        guard let bytes = try? value.encoded() else { return "\(value.opCode.name)" }
        return bytes.withUnsafeBytes { raw in
            (try? RecordAccessControlPoint(parsing: raw).summary) ?? "\(value.opCode.name)"
        }
    }

    /// What is asked (Report Stored Records, Delete, Abort, Report Number...).
    public var opCode: RACPOpCode
    /// Which records (all, less or equal, within range, first, last).
    public var `operator`: RACPOperator
    /// The operand bytes (filter type and values), a view.
    public var operand: UnsafeRawBufferPointer

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        opCode = RACPOpCode(rawValue: try r.u8("RACP op code"))
        `operator` = RACPOperator(rawValue: try r.u8("RACP operator"))
        let start = r.offset
        operand = r.rest()
        var o = ByteReader(operand, baseOffset: start)
        switch opCode.rawValue {
        case 5:
            _ = try o.u16("number of records")
            try o.expectEnd()
        case 6:
            _ = try o.u8("request op code")
            _ = try o.u8("response code value")
            try o.expectEnd()
        case 3:
            try o.expectEnd("Abort Operation takes no operand")
        case 1, 2, 4:
            switch `operator`.rawValue {
            case 0, 1, 5, 6:
                try o.expectEnd("this RACP operator takes no operand")
            case 2, 3, 4:
                let type = try o.u8("RACP filter type")
                let width = type == 1 ? 2 : type == 2 ? 7 : 0
                if width != 0 {
                    let n = `operator`.rawValue == 4 ? 2 : 1
                    for _ in 0 ..< n {
                        if type == 2 { _ = try DateTime.read(&o) } else { try o.skip(width, "RACP filter value") }
                    }
                    try o.expectEnd("bytes after the RACP filter values")
                }
            default:
                break
            }
        default:
            break
        }
    }

    /// The count of a Number of Stored Records Response.
    @inlinable public var numberOfRecords: UInt16? {
        guard opCode.rawValue == 5, operand.count == 2 else { return nil }
        return UInt16(operand[0]) | UInt16(operand[1]) << 8
    }

    /// The request op code and result of a Response Code.
    @inlinable public var response: (requestOpCode: RACPOpCode, code: RACPResponseCode)? {
        guard opCode.rawValue == 6, operand.count == 2 else { return nil }
        return (RACPOpCode(rawValue: operand[0]), RACPResponseCode(rawValue: operand[1]))
    }

    /// The filter of a request with operator ≤, ≥ or within range, decoded where the filter type
    /// is known. Nil for other op codes and operators.
    public var filter: RACPFilter? {
        guard [1, 2, 4].contains(opCode.rawValue), (2 ... 4).contains(`operator`.rawValue), !operand.isEmpty else { return nil }
        let type = operand[0]
        var r = ByteReader(UnsafeRawBufferPointer(rebasing: operand[1...]))
        do throws(WireError) {
            switch type {
            case 1:
                let a = try r.u16()
                let b = `operator`.rawValue == 4 ? try r.u16() : nil
                switch `operator`.rawValue {
                case 2: return .sequenceNumber(lower: nil, upper: a)
                case 3: return .sequenceNumber(lower: a, upper: nil)
                default: return .sequenceNumber(lower: a, upper: b)
                }
            case 2:
                let a = try DateTime.read(&r)
                let b = `operator`.rawValue == 4 ? try DateTime.read(&r) : nil
                switch `operator`.rawValue {
                case 2: return .userFacingTime(lower: nil, upper: a)
                case 3: return .userFacingTime(lower: a, upper: nil)
                default: return .userFacingTime(lower: a, upper: b)
                }
            default:
                return .other(type: type, bytes: Array(operand[1...]))
            }
        } catch {
            return nil
        }
    }

    public var encodedLength: Int { 2 + operand.count }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(opCode.rawValue)
        try w.u8(`operator`.rawValue)
        try w.bytes(operand)
    }

    var fields: [Field] {
        var f: [Field] = [
            Field("op_code", .named(UInt64(opCode.rawValue), opCode.name)),
            Field("operator", .named(UInt64(`operator`.rawValue), `operator`.name)),
        ]
        if let n = numberOfRecords { f.append(Field("number_of_records", .uint(UInt64(n)))) }
        if let (req, code) = response {
            f.append(Field("request_op_code", .named(UInt64(req.rawValue), req.name)))
            f.append(Field("response_code", .named(UInt64(code.rawValue), code.name)))
        }
        if let flt = filter { f.append(Field("filter", .text(flt.description))) }
        if !operand.isEmpty { f.append(Field("operand", .bytes(operand))) }
        return f
    }

    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String {
        if let n = numberOfRecords { return "number of stored records: \(n)" }
        if let (req, code) = response { return "response to \(req.name): \(code.name)" }
        var s = "\(opCode.name), \(`operator`.name)"
        if let flt = filter { s += ", \(flt.description)" } else if !operand.isEmpty { s += ", operand \(Hex.string(operand, separator: " "))" }
        return s
    }

    /// An owned RACP value for sending (requests from the collector, responses from the sensor).
    public struct Owned: WireEncodable, Hashable, Sendable {
        /// What is asked.
        public var opCode: RACPOpCode
        /// Which records.
        public var `operator`: RACPOperator
        /// The operand bytes.
        public var operand: [UInt8]
        /// A request as given.
        public init(opCode: RACPOpCode, operator: RACPOperator, operand: [UInt8] = []) {
            self.opCode = opCode
            self.operator = `operator`
            self.operand = operand
        }

        /// 01 01: report all stored records.
        public static let reportAllRecords = Owned(opCode: .reportStoredRecords, operator: .allRecords)
        /// 04 01: report the number of all stored records.
        public static let reportNumberOfAllRecords = Owned(opCode: .reportNumberOfStoredRecords, operator: .allRecords)
        /// 02 01: delete all stored records.
        public static let deleteAllRecords = Owned(opCode: .deleteStoredRecords, operator: .allRecords)
        /// 03 00: abort the operation in progress.
        public static let abort = Owned(opCode: .abortOperation, operator: .null)
        /// 01 05 / 01 06: the first / last record.
        public static let reportFirstRecord = Owned(opCode: .reportStoredRecords, operator: .firstRecord)
        /// Report the last stored record.
        public static let reportLastRecord = Owned(opCode: .reportStoredRecords, operator: .lastRecord)

        /// 01 03 01 NN NN: records with sequence number ≥ `n` (`op` may be any request op code).
        public static func records(_ op: RACPOpCode = .reportStoredRecords, sequenceNumberAtLeast n: UInt16) -> Owned {
            Owned(opCode: op, operator: .greaterThanOrEqual, operand: [1, UInt8(n & 0xFF), UInt8(n >> 8)])
        }
        /// 01 02 01 NN NN: records with sequence number ≤ `n`.
        public static func records(_ op: RACPOpCode = .reportStoredRecords, sequenceNumberAtMost n: UInt16) -> Owned {
            Owned(opCode: op, operator: .lessThanOrEqual, operand: [1, UInt8(n & 0xFF), UInt8(n >> 8)])
        }
        /// 01 04 01 LL LL UU UU: records with sequence number in `range`.
        public static func records(_ op: RACPOpCode = .reportStoredRecords, sequenceNumbersIn range: ClosedRange<UInt16>) -> Owned {
            let a = range.lowerBound, b = range.upperBound
            return Owned(opCode: op, operator: .withinRange,
                         operand: [1, UInt8(a & 0xFF), UInt8(a >> 8), UInt8(b & 0xFF), UInt8(b >> 8)])
        }
        /// 05 00 NN NN: Number of Stored Records Response.
        public static func numberOfRecordsResponse(_ n: UInt16) -> Owned {
            Owned(opCode: .numberOfStoredRecordsResponse, operator: .null, operand: [UInt8(n & 0xFF), UInt8(n >> 8)])
        }
        /// 06 00 RQ RC: Response Code.
        public static func response(to request: RACPOpCode, _ code: RACPResponseCode) -> Owned {
            Owned(opCode: .responseCode, operator: .null, operand: [request.rawValue, code.rawValue])
        }

        public var encodedLength: Int { 2 + operand.count }
        public func encode(into w: inout ByteWriter) throws(WireError) {
            try w.u8(opCode.rawValue)
            try w.u8(`operator`.rawValue)
            try w.bytes(operand)
        }
    }
}

/// A decoded RACP filter; a nil bound means open on that side.
public enum RACPFilter: Hashable, Sendable, CustomStringConvertible {
    case sequenceNumber(lower: UInt16?, upper: UInt16?)
    case userFacingTime(lower: DateTime?, upper: DateTime?)
    case other(type: UInt8, bytes: [UInt8])

    public var description: String {
        func range(_ name: String, _ a: String?, _ b: String?) -> String {
            switch (a, b) {
            case let (a?, b?): "\(name) \(a)...\(b)"
            case let (a?, nil): "\(name) ≥ \(a)"
            case let (nil, b?): "\(name) ≤ \(b)"
            default: name
            }
        }
        switch self {
        case let .sequenceNumber(a, b): return range("sequence number", a.map { "\($0)" }, b.map { "\($0)" })
        case let .userFacingTime(a, b): return range("user facing time", a?.description, b?.description)
        case let .other(t, bytes): return "filter type \(t) \(Hex.string(bytes, separator: " "))"
        }
    }
}

/// RACP op codes.
public struct RACPOpCode: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Report stored records (1).
    public static let reportStoredRecords = Self(rawValue: 1)
    /// Delete stored records (2).
    public static let deleteStoredRecords = Self(rawValue: 2)
    /// Abort operation (3).
    public static let abortOperation = Self(rawValue: 3)
    /// Report number of stored records (4).
    public static let reportNumberOfStoredRecords = Self(rawValue: 4)
    /// Number of stored records response (5).
    public static let numberOfStoredRecordsResponse = Self(rawValue: 5)
    /// Response code (6).
    public static let responseCode = Self(rawValue: 6)
    /// The name from the specification.
    public var name: String {
        switch rawValue {
        case 1: "report stored records"
        case 2: "delete stored records"
        case 3: "abort operation"
        case 4: "report number of stored records"
        case 5: "number of stored records response"
        case 6: "response code"
        default: "reserved"
        }
    }
}

/// RACP operators.
public struct RACPOperator: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Null (0).
    public static let null = Self(rawValue: 0)
    /// All records (1).
    public static let allRecords = Self(rawValue: 1)
    /// Less than or equal (2).
    public static let lessThanOrEqual = Self(rawValue: 2)
    /// Greater than or equal (3).
    public static let greaterThanOrEqual = Self(rawValue: 3)
    /// Within range (4).
    public static let withinRange = Self(rawValue: 4)
    /// First record (5).
    public static let firstRecord = Self(rawValue: 5)
    /// Last record (6).
    public static let lastRecord = Self(rawValue: 6)
    /// The name from the specification.
    public var name: String {
        switch rawValue {
        case 0: "null"
        case 1: "all records"
        case 2: "less than or equal to"
        case 3: "greater than or equal to"
        case 4: "within range of (inclusive)"
        case 5: "first record"
        case 6: "last record"
        default: "reserved"
        }
    }
}

/// RACP filter types (first operand byte of ≤ / ≥ / range requests).
public struct RACPFilterType: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Sequence number (1).
    public static let sequenceNumber = Self(rawValue: 1)
    /// User facing time (2).
    public static let userFacingTime = Self(rawValue: 2)
    /// The name from the specification.
    public var name: String {
        switch rawValue {
        case 1: "sequence number"
        case 2: "user facing time"
        default: "reserved"
        }
    }
}

/// RACP Response Code values.
public struct RACPResponseCode: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Success (1).
    public static let success = Self(rawValue: 1)
    /// Op code not supported (2).
    public static let opCodeNotSupported = Self(rawValue: 2)
    /// Invalid operator (3).
    public static let invalidOperator = Self(rawValue: 3)
    /// Operator not supported (4).
    public static let operatorNotSupported = Self(rawValue: 4)
    /// Invalid operand (5).
    public static let invalidOperand = Self(rawValue: 5)
    /// No records found (6).
    public static let noRecordsFound = Self(rawValue: 6)
    /// Abort unsuccessful (7).
    public static let abortUnsuccessful = Self(rawValue: 7)
    /// Procedure not completed (8).
    public static let procedureNotCompleted = Self(rawValue: 8)
    /// Operand not supported (9).
    public static let operandNotSupported = Self(rawValue: 9)
    /// The name from the specification.
    public var name: String {
        switch rawValue {
        case 1: "success"
        case 2: "op code not supported"
        case 3: "invalid operator"
        case 4: "operator not supported"
        case 5: "invalid operand"
        case 6: "no records found"
        case 7: "abort unsuccessful"
        case 8: "procedure not completed"
        case 9: "operand not supported"
        default: "reserved"
        }
    }
}
