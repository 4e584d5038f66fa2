// LE advertising report events: HCI_LE_Advertising_Report (§7.7.65.2),
// HCI_LE_Directed_Advertising_Report (§7.7.65.11) and HCI_LE_Extended_Advertising_Report
// (§7.7.65.13), Core Vol 4 Part E. The parsed events are views over the caller's buffer
// (valid while it is alive) with allocation-free report iterators.

/// Event_Type of a legacy LE Advertising Report (Core Vol 4 Part E §7.7.65.2).
public struct LEAdvertisingReportEventType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Connectable and scannable undirected advertising.
    public static let advInd = LEAdvertisingReportEventType(rawValue: 0x00)
    /// Connectable directed advertising.
    public static let advDirectInd = LEAdvertisingReportEventType(rawValue: 0x01)
    /// Scannable undirected advertising.
    public static let advScanInd = LEAdvertisingReportEventType(rawValue: 0x02)
    /// Non-connectable undirected advertising.
    public static let advNonconnInd = LEAdvertisingReportEventType(rawValue: 0x03)
    /// Scan response.
    public static let scanRsp = LEAdvertisingReportEventType(rawValue: 0x04)
    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0: "ADV_IND"
        case 1: "ADV_DIRECT_IND"
        case 2: "ADV_SCAN_IND"
        case 3: "ADV_NONCONN_IND"
        case 4: "SCAN_RSP"
        default: nil
        }
    }
    public var description: String { name ?? "event type 0x\(Hex.pad(rawValue, 2))" }
}

// MARK: - LE Advertising Report

/// One report of an HCI_LE_Advertising_Report; `data` points into the parsed buffer.
public struct LEAdvertisingReport {
    /// Event_Type.
    public let eventType: LEAdvertisingReportEventType
    /// Address.
    public let address: LEAddress
    /// The advertising or scan response data (0...31 bytes), not copied.
    public let data: UnsafeRawBufferPointer
    /// RSSI in dBm; 127 means not available.
    public let rssi: Int8

    /// The event parameters as given.
    @inlinable
    public init(eventType: LEAdvertisingReportEventType, address: LEAddress, data: UnsafeRawBufferPointer, rssi: Int8) {
        self.eventType = eventType
        self.address = address
        self.data = data
        self.rssi = rssi
    }

    /// `rssi`, or nil when the controller reports 127 (not available).
    @inlinable public var rssiIfAvailable: Int8? { rssi == 127 ? nil : rssi }

    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { FieldTree.build { describe(into: &$0) } }

    /// Writes the report's fields (``fields`` is made from this).
    public func describe<S: FieldSink & ~Copyable>(into s: inout S) {
        s.named("event_type", UInt64(eventType.rawValue), eventType.name ?? "Reserved")
        s.named("address_type", UInt64(address.type.rawValue), address.type.description)
        s.address("address", address.address)
        s.uint("data_length", UInt64(data.count))
        s.bytes("data", data)
        s.beginObject("advertising_data")
        AdvertisingData(data).describeAny(into: &s)
        s.end()
        s.dbm("rssi", rssi)
    }
}

extension FieldSink where Self: ~Copyable {
    /// An RSSI or TX power in dBm, where 127 means "not available".
    @inlinable public mutating func dbm(_ name: FieldName, _ v: Int8) {
        if v == 127 { named(name, 127, literal: "not available") } else { int(name, Int64(v)) }
    }
}

/// HCI_LE_Advertising_Report (Core Vol 4 Part E §7.7.65.2), as a view over the reports.
///
/// Reports are laid out one after another (Event_Type, Address_Type, Address, Data_Length,
/// Data, RSSI). Parsing validates every report (Num_Reports 1...25, Data_Length ≤ 31, no
/// bytes left over), so iterating a parsed event does not fail. Valid while the parsed
/// buffer is alive.
public struct LEAdvertisingReportEvent: LEMetaEventParameters {
    /// Num_Reports: the reports in the event.
    public let numReports: UInt8
    /// All report bytes (after Num_Reports).
    public let reportBytes: UnsafeRawBufferPointer
    /// Offset of `reportBytes` in the event packet, for error offsets.
    @usableFromInline let reportsOffset: Int

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let countOffset = r.offset
        let n = try r.u8("Num_Reports")
        guard n >= 1, n <= 25 else { throw WireError(.invalidValue, at: countOffset, "Num_Reports must be 1...25") }
        numReports = n
        reportsOffset = r.offset
        reportBytes = r.rest()
        // Validate every report once (cheaply: only the lengths), so iteration cannot fail.
        var v = ByteReader(reportBytes, baseOffset: reportsOffset)
        var left = n
        while left > 0 {
            left &-= 1
            try v.skip(8, "Event_Type, Address_Type, Address")
            let length = try v.u8("Data_Length")
            guard length <= 31 else {
                throw WireError(.invalidLength, at: v.offset &- 1, "Data_Length over 31 in a legacy advertising report")
            }
            try v.skip(Int(length) &+ 1, "Data, RSSI")
        }
        guard v.isAtEnd else {
            throw WireError(.trailingBytes, at: v.offset, "bytes after the last advertising report")
        }
    }

    /// Allocation-free iterator over the reports.
    public struct Iterator {
        @usableFromInline var reader: ByteReader
        @usableFromInline var left: UInt8

        @inlinable
        init(_ bytes: UnsafeRawBufferPointer, baseOffset: Int, count: UInt8) {
            reader = ByteReader(bytes, baseOffset: baseOffset)
            left = count
        }

        @inlinable
        public mutating func next() throws(WireError) -> LEAdvertisingReport? {
            guard left > 0 else { return nil }
            left &-= 1
            let eventType = try reader.u8("Event_Type")
            let addressType = try reader.u8("Address_Type")
            let address = try reader.u48("Address")
            let length = try reader.u8("Data_Length")
            guard length <= 31 else {
                throw WireError(.invalidLength, at: reader.offset &- 1, "Data_Length over 31 in a legacy advertising report")
            }
            let data = try reader.bytes(Int(length), "Data")
            let rssi = try reader.i8("RSSI")
            return LEAdvertisingReport(
                eventType: LEAdvertisingReportEventType(rawValue: eventType),
                address: LEAddress(BluetoothAddress(rawValue: address), type: LEAddressType(rawValue: addressType)),
                data: data, rssi: rssi)
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(reportBytes, baseOffset: reportsOffset, count: numReports) }
    /// The reports, to iterate with `while let r = try reports.next()`.
    @inlinable public var reports: Iterator { makeIterator() }

    /// The LE Meta event subevent code.
    public var subeventCode: LEMetaSubeventCode { .advertisingReport }
    public var subeventParameterLength: Int { 1 &+ reportBytes.count }
    public func encodeSubeventParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(numReports)
        try w.bytes(reportBytes)
    }

    public var fieldTitle: String { "HCI_LE_Advertising_Report" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { FieldTree.build { describe(into: &$0) } }

    /// Writes `num_reports` and the reports (``fields`` is made from this).
    public func describe<S: FieldSink & ~Copyable>(into s: inout S) {
        s.uint("num_reports", UInt64(numReports))
        var count = 0
        var it = makeIterator()
        while (try? it.next()) != nil { count += 1 }
        s.beginList("reports", count: count)
        it = makeIterator()
        while let report = try? it.next() {
            s.beginObject("")
            report.describe(into: &s)
            s.end()
        }
        s.end()
    }

    /// An owned LE Advertising Report event for encoding.
    public struct Owned: LEMetaEventParameters, Hashable, Sendable {
        /// One report, owned (for encoding and tests).
        public struct Report: Hashable, Sendable {
            /// Event_Type.
            public var eventType: LEAdvertisingReportEventType
            /// Address.
            public var address: LEAddress
            /// At most 31 bytes.
            public var data: [UInt8]
            /// RSSI in dBm (127: not available).
            public var rssi: Int8
            /// A report as given.
            public init(eventType: LEAdvertisingReportEventType, address: LEAddress, data: [UInt8], rssi: Int8) {
                self.eventType = eventType
                self.address = address
                self.data = data
                self.rssi = rssi
            }
            /// An owned copy of a report view.
            public init(_ view: LEAdvertisingReport) {
                self.init(eventType: view.eventType, address: view.address, data: Array(view.data), rssi: view.rssi)
            }
        }

        /// The reports, in order.
        public var reports: [Report]
        /// The event parameters as given.
        public init(_ reports: [Report]) { self.reports = reports }

        /// The LE Meta event subevent code.
        public var subeventCode: LEMetaSubeventCode { .advertisingReport }
        public var subeventParameterLength: Int { reports.reduce(1) { $0 &+ 10 &+ $1.data.count } }
        public func encodeSubeventParameters(into w: inout ByteWriter) throws(WireError) {
            guard reports.count >= 1, reports.count <= 25 else {
                throw WireError(.valueOutOfRange, at: w.count, "Num_Reports must be 1...25")
            }
            try w.u8(UInt8(reports.count))
            for r in reports {
                guard r.data.count <= 31 else {
                    throw WireError(.valueOutOfRange, at: w.count, "legacy advertising data is at most 31 bytes")
                }
                try w.u8(r.eventType.rawValue)
                try w.u8(r.address.type.rawValue)
                try r.address.address.write(&w)
                try w.u8(UInt8(r.data.count))
                try w.bytes(r.data)
                try w.i8(r.rssi)
            }
        }
        public var fieldTitle: String { "HCI_LE_Advertising_Report" }
        /// The decoded fields, for the text and JSON renderers.
        public var fields: [Field] {
            [Field("num_reports", .u(reports.count)),
             Field("reports", .list(reports.map { r in
                 .object(r.data.withUnsafeBytes { LEAdvertisingReport(eventType: r.eventType, address: r.address, data: $0, rssi: r.rssi).fields })
             }))]
        }
    }
}

// MARK: - LE Directed Advertising Report

/// One report of an HCI_LE_Directed_Advertising_Report (all scalars).
public struct LEDirectedAdvertisingReport: Hashable, Sendable {
    /// Always ADV_DIRECT_IND (0x01) in current specifications.
    public var eventType: LEAdvertisingReportEventType
    /// Address.
    public var address: LEAddress
    /// The TargetA address the advertisement was directed to (an RPA of ours).
    public var directAddress: LEAddress
    /// RSSI in dBm; 127 means not available.
    public var rssi: Int8

    /// The event parameters as given.
    @inlinable
    public init(eventType: LEAdvertisingReportEventType, address: LEAddress, directAddress: LEAddress, rssi: Int8) {
        self.eventType = eventType
        self.address = address
        self.directAddress = directAddress
        self.rssi = rssi
    }

    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        [Field("event_type", .code(eventType, eventType.name)),
         Field("address_type", .addressType(address.type)),
         Field("address", .address(address.address)),
         Field("direct_address_type", .addressType(directAddress.type)),
         Field("direct_address", .address(directAddress.address)),
         Field("rssi", .dbm(rssi))]
    }
}

/// HCI_LE_Directed_Advertising_Report (Core Vol 4 Part E §7.7.65.11): 16-byte reports.
/// A view over the parsed buffer, valid while it is alive.
public struct LEDirectedAdvertisingReportEvent: LEMetaEventParameters {
    /// Num_Reports: the reports in the event.
    public let numReports: UInt8
    /// The reports' bytes (a view of the event).
    public let reportBytes: UnsafeRawBufferPointer
    @usableFromInline let reportsOffset: Int

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let countOffset = r.offset
        let n = try r.u8("Num_Reports")
        guard n >= 1, n <= 25 else { throw WireError(.invalidValue, at: countOffset, "Num_Reports must be 1...25") }
        let needed = Int(n) &* 16
        guard r.remaining >= needed else { throw WireError(.truncated, at: r.offset &+ r.remaining, "Num_Reports overruns the event") }
        guard r.remaining == needed else { throw WireError(.trailingBytes, at: r.offset &+ needed, "bytes after the last directed advertising report") }
        numReports = n
        reportsOffset = r.offset
        reportBytes = r.rest()
    }

    /// Iterates the reports without copying; each may throw a ``WireError`` when malformed.
    public struct Iterator {
        @usableFromInline var reader: ByteReader
        @usableFromInline var left: UInt8
        @inlinable init(_ bytes: UnsafeRawBufferPointer, baseOffset: Int, count: UInt8) {
            reader = ByteReader(bytes, baseOffset: baseOffset)
            left = count
        }
        @inlinable
        public mutating func next() throws(WireError) -> LEDirectedAdvertisingReport? {
            guard left > 0 else { return nil }
            left &-= 1
            let et = try reader.u8("Event_Type")
            let at = try reader.u8("Address_Type")
            let a = try reader.u48("Address")
            let dt = try reader.u8("Direct_Address_Type")
            let d = try reader.u48("Direct_Address")
            let rssi = try reader.i8("RSSI")
            return LEDirectedAdvertisingReport(
                eventType: LEAdvertisingReportEventType(rawValue: et),
                address: LEAddress(BluetoothAddress(rawValue: a), type: LEAddressType(rawValue: at)),
                directAddress: LEAddress(BluetoothAddress(rawValue: d), type: LEAddressType(rawValue: dt)),
                rssi: rssi)
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(reportBytes, baseOffset: reportsOffset, count: numReports) }
    /// The reports, one by one.
    @inlinable public var reports: Iterator { makeIterator() }

    /// The LE Meta event subevent code.
    public var subeventCode: LEMetaSubeventCode { .directedAdvertisingReport }
    public var subeventParameterLength: Int { 1 &+ reportBytes.count }
    public func encodeSubeventParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(numReports)
        try w.bytes(reportBytes)
    }

    public var fieldTitle: String { "HCI_LE_Directed_Advertising_Report" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] {
        var list: [FieldValue] = []
        var it = makeIterator()
        while let report = try? it.next() { list.append(.object(report.fields)) }
        return [Field("num_reports", .u(numReports)), Field("reports", .list(list))]
    }

    /// An owned Directed Advertising Report event for encoding.
    public struct Owned: LEMetaEventParameters, Hashable, Sendable {
        /// The reports, in order.
        public var reports: [LEDirectedAdvertisingReport]
        /// The event parameters as given.
        public init(_ reports: [LEDirectedAdvertisingReport]) { self.reports = reports }
        /// The LE Meta event subevent code.
        public var subeventCode: LEMetaSubeventCode { .directedAdvertisingReport }
        public var subeventParameterLength: Int { 1 &+ reports.count &* 16 }
        public func encodeSubeventParameters(into w: inout ByteWriter) throws(WireError) {
            guard reports.count >= 1, reports.count <= 15 else {
                throw WireError(.valueOutOfRange, at: w.count, "Num_Reports must be 1...15 to fit one event")
            }
            try w.u8(UInt8(reports.count))
            for r in reports {
                try w.u8(r.eventType.rawValue)
                try w.u8(r.address.type.rawValue)
                try r.address.address.write(&w)
                try w.u8(r.directAddress.type.rawValue)
                try r.directAddress.address.write(&w)
                try w.i8(r.rssi)
            }
        }
        public var fieldTitle: String { "HCI_LE_Directed_Advertising_Report" }
        /// The decoded fields, for the text and JSON renderers.
        public var fields: [Field] {
            [Field("num_reports", .u(reports.count)), Field("reports", .list(reports.map { .object($0.fields) }))]
        }
    }
}

// MARK: - LE Extended Advertising Report

/// Data_Status bits of an extended advertising report's Event_Type (bits 5–6).
public struct LEAdvertisingDataStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Complete (0).
    public static let complete = LEAdvertisingDataStatus(rawValue: 0)
    /// Incomplete, more data to come in further reports.
    public static let incompleteMoreData = LEAdvertisingDataStatus(rawValue: 1)
    /// Incomplete, data truncated, no more to come.
    public static let incompleteTruncated = LEAdvertisingDataStatus(rawValue: 2)
    /// The name in the specification (nil: not assigned).
    public var name: String? {
        switch rawValue {
        case 0: "Complete"
        case 1: "Incomplete, more data to come"
        case 2: "Incomplete, data truncated, no more to come"
        default: nil
        }
    }
    public var description: String { name ?? "reserved data status \(rawValue)" }
}

/// Event_Type of an extended advertising report: a bit field (Core Vol 4 Part E §7.7.65.13).
public struct LEExtendedAdvertisingEventType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Event_Type bit 0: connectable.
    public static let connectableBit: UInt16 = 1 << 0
    /// Event_Type bit 1: scannable.
    public static let scannableBit: UInt16 = 1 << 1
    /// Event_Type bit 2: directed.
    public static let directedBit: UInt16 = 1 << 2
    /// Event_Type bit 3: a scan response.
    public static let scanResponseBit: UInt16 = 1 << 3
    /// Event_Type bit 4: legacy PDUs.
    public static let legacyBit: UInt16 = 1 << 4

    /// Builds an event type from its bits.
    @inlinable
    public init(connectable: Bool = false, scannable: Bool = false, directed: Bool = false,
                scanResponse: Bool = false, legacy: Bool = false, dataStatus: LEAdvertisingDataStatus = .complete) {
        var v: UInt16 = 0
        if connectable { v |= Self.connectableBit }
        if scannable { v |= Self.scannableBit }
        if directed { v |= Self.directedBit }
        if scanResponse { v |= Self.scanResponseBit }
        if legacy { v |= Self.legacyBit }
        v |= UInt16(dataStatus.rawValue & 0x3) << 5
        self.init(rawValue: v)
    }

    /// Connectable advertising.
    @inlinable public var isConnectable: Bool { rawValue & Self.connectableBit != 0 }
    /// Scannable advertising.
    @inlinable public var isScannable: Bool { rawValue & Self.scannableBit != 0 }
    /// Directed advertising.
    @inlinable public var isDirected: Bool { rawValue & Self.directedBit != 0 }
    /// A scan response.
    @inlinable public var isScanResponse: Bool { rawValue & Self.scanResponseBit != 0 }
    /// The report is for a legacy advertising PDU.
    @inlinable public var isLegacy: Bool { rawValue & Self.legacyBit != 0 }
    /// Data_Status (bits 5-6): complete, more to come, or truncated.
    @inlinable public var dataStatus: LEAdvertisingDataStatus { LEAdvertisingDataStatus(rawValue: UInt8(truncatingIfNeeded: rawValue >> 5) & 0x3) }

    /// For legacy reports, the PDU the combination of bits stands for (Table 7.1 of §7.7.65.13).
    public var legacyPDUName: String? {
        guard isLegacy else { return nil }
        switch rawValue & 0x1F {
        case 0x13: return "ADV_IND"
        case 0x15: return "ADV_DIRECT_IND"
        case 0x12: return "ADV_SCAN_IND"
        case 0x10: return "ADV_NONCONN_IND"
        case 0x1B: return "SCAN_RSP to an ADV_IND"
        case 0x1A: return "SCAN_RSP to an ADV_SCAN_IND"
        default: return nil
        }
    }

    public var description: String {
        var parts: [String] = []
        if isConnectable { parts.append("connectable") }
        if isScannable { parts.append("scannable") }
        if isDirected { parts.append("directed") }
        if isScanResponse { parts.append("scan response") }
        if isLegacy { parts.append("legacy" + (legacyPDUName.map { " \($0)" } ?? "")) }
        parts.append(dataStatus.description)
        return parts.joined(separator: ", ")
    }

    var fieldValue: FieldValue { FieldTree.value { describe("event_type", into: &$0) } }

    /// Writes the event type as the object `name`: its bits spelled out.
    func describe<S: FieldSink & ~Copyable>(_ name: FieldName, into s: inout S) {
        s.beginObject(name)
        s.uint("value", UInt64(rawValue))
        s.bool("connectable", isConnectable)
        s.bool("scannable", isScannable)
        s.bool("directed", isDirected)
        s.bool("scan_response", isScanResponse)
        s.bool("legacy", isLegacy)
        s.named("data_status", UInt64(dataStatus.rawValue), dataStatus.name ?? "Reserved")
        s.end()
    }
}

/// One report of an HCI_LE_Extended_Advertising_Report; `data` points into the parsed buffer.
public struct LEExtendedAdvertisingReport {
    /// Event_Type.
    public let eventType: LEExtendedAdvertisingEventType
    /// Address type 0xFF: anonymous advertisement.
    public let address: LEAddress
    /// Primary_PHY.
    public let primaryPHY: LEPHY
    /// `.none` (0x00): no packets on the secondary advertising physical channel.
    public let secondaryPHY: LEPHY
    /// Advertising_SID, 0xFF when no ADI field was in the PDU.
    public let advertisingSID: UInt8
    /// TX_Power in dBm; 127 means not available.
    public let txPower: Int8
    /// RSSI in dBm; 127 means not available.
    public let rssi: Int8
    /// Periodic_Advertising_Interval in units of 1.25 ms, 0 when there is no periodic advertising.
    public let periodicAdvertisingInterval: UInt16
    /// Direct_Address.
    public let directAddress: LEAddress
    /// Data (a view of the event).
    public let data: UnsafeRawBufferPointer

    /// The event parameters as given.
    @inlinable
    public init(eventType: LEExtendedAdvertisingEventType, address: LEAddress, primaryPHY: LEPHY, secondaryPHY: LEPHY,
                advertisingSID: UInt8, txPower: Int8, rssi: Int8, periodicAdvertisingInterval: UInt16,
                directAddress: LEAddress, data: UnsafeRawBufferPointer) {
        self.eventType = eventType
        self.address = address
        self.primaryPHY = primaryPHY
        self.secondaryPHY = secondaryPHY
        self.advertisingSID = advertisingSID
        self.txPower = txPower
        self.rssi = rssi
        self.periodicAdvertisingInterval = periodicAdvertisingInterval
        self.directAddress = directAddress
        self.data = data
    }

    /// The RSSI, nil when the controller reports 127 (not available).
    @inlinable public var rssiIfAvailable: Int8? { rssi == 127 ? nil : rssi }
    /// The TX power, nil when the controller reports 127 (not available).
    @inlinable public var txPowerIfAvailable: Int8? { txPower == 127 ? nil : txPower }

    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { FieldTree.build { describe(into: &$0) } }

    /// Writes the report's fields (``fields`` is made from this).
    public func describe<S: FieldSink & ~Copyable>(into s: inout S) {
        eventType.describe("event_type", into: &s)
        s.named("address_type", UInt64(address.type.rawValue), address.type.description)
        s.address("address", address.address)
        s.named("primary_phy", UInt64(primaryPHY.rawValue), primaryPHY.name ?? "Reserved")
        if secondaryPHY.rawValue == 0 {
            s.named("secondary_phy", 0, literal: "No packets on the secondary advertising physical channel")
        } else {
            s.named("secondary_phy", UInt64(secondaryPHY.rawValue), secondaryPHY.name ?? "Reserved")
        }
        if advertisingSID == 0xFF { s.named("advertising_sid", 0xFF, literal: "No ADI field") } else {
            s.uint("advertising_sid", UInt64(advertisingSID))
        }
        s.dbm("tx_power", txPower)
        s.dbm("rssi", rssi)
        s.uint("periodic_advertising_interval", UInt64(periodicAdvertisingInterval))
        s.named("direct_address_type", UInt64(directAddress.type.rawValue), directAddress.type.description)
        s.address("direct_address", directAddress.address)
        s.uint("data_length", UInt64(data.count))
        s.bytes("data", data)
        s.beginObject("advertising_data")
        AdvertisingData(data).describeAny(into: &s)
        s.end()
    }
}

/// HCI_LE_Extended_Advertising_Report (Core Vol 4 Part E §7.7.65.13), as a view.
///
/// Each report: Event_Type u16, Address_Type, Address, Primary_PHY, Secondary_PHY,
/// Advertising_SID, TX_Power, RSSI, Periodic_Advertising_Interval u16, Direct_Address_Type,
/// Direct_Address, Data_Length, Data. Parsing validates all reports (Num_Reports 1...10),
/// so iteration does not fail. Valid while the parsed buffer is alive.
public struct LEExtendedAdvertisingReportEvent: LEMetaEventParameters {
    /// Num_Reports: the reports in the event.
    public let numReports: UInt8
    /// The reports' bytes (a view of the event).
    public let reportBytes: UnsafeRawBufferPointer
    @usableFromInline let reportsOffset: Int

    /// Fixed bytes of one report before its Data.
    @inlinable public static var reportHeaderLength: Int { 24 }

    @inlinable
    init(parameters r: inout ByteReader) throws(WireError) {
        let countOffset = r.offset
        let n = try r.u8("Num_Reports")
        guard n >= 1, n <= 10 else { throw WireError(.invalidValue, at: countOffset, "Num_Reports must be 1...10") }
        numReports = n
        reportsOffset = r.offset
        reportBytes = r.rest()
        // Validate every report once (only the lengths), so iteration cannot fail.
        var v = ByteReader(reportBytes, baseOffset: reportsOffset)
        var left = n
        while left > 0 {
            left &-= 1
            try v.skip(Self.reportHeaderLength &- 1, "extended advertising report fields")
            let length = try v.u8("Data_Length")
            try v.skip(Int(length), "Data")
        }
        guard v.isAtEnd else {
            throw WireError(.trailingBytes, at: v.offset, "bytes after the last extended advertising report")
        }
    }

    /// Allocation-free iterator over the reports.
    public struct Iterator {
        @usableFromInline var reader: ByteReader
        @usableFromInline var left: UInt8
        @inlinable init(_ bytes: UnsafeRawBufferPointer, baseOffset: Int, count: UInt8) {
            reader = ByteReader(bytes, baseOffset: baseOffset)
            left = count
        }
        @inlinable
        public mutating func next() throws(WireError) -> LEExtendedAdvertisingReport? {
            guard left > 0 else { return nil }
            left &-= 1
            let et = try reader.u16("Event_Type")
            let at = try reader.u8("Address_Type")
            let a = try reader.u48("Address")
            let p1 = try reader.u8("Primary_PHY")
            let p2 = try reader.u8("Secondary_PHY")
            let sid = try reader.u8("Advertising_SID")
            let tx = try reader.i8("TX_Power")
            let rssi = try reader.i8("RSSI")
            let interval = try reader.u16("Periodic_Advertising_Interval")
            let dt = try reader.u8("Direct_Address_Type")
            let d = try reader.u48("Direct_Address")
            let length = try reader.u8("Data_Length")
            let data = try reader.bytes(Int(length), "Data")
            return LEExtendedAdvertisingReport(
                eventType: LEExtendedAdvertisingEventType(rawValue: et),
                address: LEAddress(BluetoothAddress(rawValue: a), type: LEAddressType(rawValue: at)),
                primaryPHY: LEPHY(rawValue: p1), secondaryPHY: LEPHY(rawValue: p2),
                advertisingSID: sid, txPower: tx, rssi: rssi, periodicAdvertisingInterval: interval,
                directAddress: LEAddress(BluetoothAddress(rawValue: d), type: LEAddressType(rawValue: dt)),
                data: data)
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(reportBytes, baseOffset: reportsOffset, count: numReports) }
    /// The reports, one by one.
    @inlinable public var reports: Iterator { makeIterator() }

    /// The LE Meta event subevent code.
    public var subeventCode: LEMetaSubeventCode { .extendedAdvertisingReport }
    public var subeventParameterLength: Int { 1 &+ reportBytes.count }
    public func encodeSubeventParameters(into w: inout ByteWriter) throws(WireError) {
        try w.u8(numReports)
        try w.bytes(reportBytes)
    }

    public var fieldTitle: String { "HCI_LE_Extended_Advertising_Report" }
    /// The decoded fields, for the text and JSON renderers.
    public var fields: [Field] { FieldTree.build { describe(into: &$0) } }

    /// Writes `num_reports` and the reports (``fields`` is made from this).
    public func describe<S: FieldSink & ~Copyable>(into s: inout S) {
        s.uint("num_reports", UInt64(numReports))
        var count = 0
        var it = makeIterator()
        while (try? it.next()) != nil { count += 1 }
        s.beginList("reports", count: count)
        it = makeIterator()
        while let report = try? it.next() {
            s.beginObject("")
            report.describe(into: &s)
            s.end()
        }
        s.end()
    }

    /// An owned Extended Advertising Report event for encoding.
    public struct Owned: LEMetaEventParameters, Hashable, Sendable {
        /// One report, owned (for encoding and tests).
        public struct Report: Hashable, Sendable {
            /// Event_Type.
            public var eventType: LEExtendedAdvertisingEventType
            /// Address.
            public var address: LEAddress
            /// Primary_PHY.
            public var primaryPHY: LEPHY
            /// Secondary_PHY.
            public var secondaryPHY: LEPHY
            /// Advertising_SID.
            public var advertisingSID: UInt8
            /// TX power in dBm (127: not available).
            public var txPower: Int8
            /// RSSI in dBm (127: not available).
            public var rssi: Int8
            /// Periodic_Advertising_Interval.
            public var periodicAdvertisingInterval: UInt16
            /// Direct_Address.
            public var directAddress: LEAddress
            /// Data (owned).
            public var data: [UInt8]

            /// A report as given.
            public init(eventType: LEExtendedAdvertisingEventType, address: LEAddress, primaryPHY: LEPHY = .le1M,
                        secondaryPHY: LEPHY = .none, advertisingSID: UInt8 = 0xFF, txPower: Int8 = 127, rssi: Int8,
                        periodicAdvertisingInterval: UInt16 = 0,
                        directAddress: LEAddress = LEAddress(.zero, type: .public), data: [UInt8]) {
                self.eventType = eventType
                self.address = address
                self.primaryPHY = primaryPHY
                self.secondaryPHY = secondaryPHY
                self.advertisingSID = advertisingSID
                self.txPower = txPower
                self.rssi = rssi
                self.periodicAdvertisingInterval = periodicAdvertisingInterval
                self.directAddress = directAddress
                self.data = data
            }

            /// An owned copy of a report view.
            public init(_ v: LEExtendedAdvertisingReport) {
                self.init(eventType: v.eventType, address: v.address, primaryPHY: v.primaryPHY, secondaryPHY: v.secondaryPHY,
                          advertisingSID: v.advertisingSID, txPower: v.txPower, rssi: v.rssi,
                          periodicAdvertisingInterval: v.periodicAdvertisingInterval, directAddress: v.directAddress,
                          data: Array(v.data))
            }
        }

        /// The reports, in order.
        public var reports: [Report]
        /// The event parameters as given.
        public init(_ reports: [Report]) { self.reports = reports }

        /// The LE Meta event subevent code.
        public var subeventCode: LEMetaSubeventCode { .extendedAdvertisingReport }
        public var subeventParameterLength: Int {
            reports.reduce(1) { $0 &+ LEExtendedAdvertisingReportEvent.reportHeaderLength &+ $1.data.count }
        }
        public func encodeSubeventParameters(into w: inout ByteWriter) throws(WireError) {
            guard reports.count >= 1, reports.count <= 10 else {
                throw WireError(.valueOutOfRange, at: w.count, "Num_Reports must be 1...10")
            }
            try w.u8(UInt8(reports.count))
            for r in reports {
                guard r.data.count <= 229 else {
                    throw WireError(.valueOutOfRange, at: w.count, "extended report data is at most 229 bytes")
                }
                try w.u16(r.eventType.rawValue)
                try w.u8(r.address.type.rawValue)
                try r.address.address.write(&w)
                try w.u8(r.primaryPHY.rawValue)
                try w.u8(r.secondaryPHY.rawValue)
                try w.u8(r.advertisingSID)
                try w.i8(r.txPower)
                try w.i8(r.rssi)
                try w.u16(r.periodicAdvertisingInterval)
                try w.u8(r.directAddress.type.rawValue)
                try r.directAddress.address.write(&w)
                try w.u8(UInt8(r.data.count))
                try w.bytes(r.data)
            }
        }
        public var fieldTitle: String { "HCI_LE_Extended_Advertising_Report" }
        /// The decoded fields, for the text and JSON renderers.
        public var fields: [Field] {
            [Field("num_reports", .u(reports.count)),
             Field("reports", .list(reports.map { r in
                 .object(r.data.withUnsafeBytes {
                     LEExtendedAdvertisingReport(eventType: r.eventType, address: r.address, primaryPHY: r.primaryPHY,
                                                 secondaryPHY: r.secondaryPHY, advertisingSID: r.advertisingSID,
                                                 txPower: r.txPower, rssi: r.rssi,
                                                 periodicAdvertisingInterval: r.periodicAdvertisingInterval,
                                                 directAddress: r.directAddress, data: $0).fields
                 })
             }))]
        }
    }
}
