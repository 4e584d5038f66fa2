// Battery, Device Information, GAP and time characteristics (GSS §3.27 Battery Level,
// §3.212 System ID, §3.130 IEEE 11073-20601 Regulatory Certification Data List, §3.178 PnP ID,
// §3.72 Device Name, §3.20 Appearance, §3.62 Current Time / Exact Time 256).
import BluetoothWire

/// Battery Level (0x2A19): percent, 0...100. Values above 100 are invalid and rejected
/// (`.invalidValue`) so a bad reading never shows as a number.
public struct BatteryLevel: RawRepresentable, Hashable, Sendable, WireEncodable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The level, 0...100 %.
    @inlinable public var percent: UInt8 { rawValue }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        rawValue = try r.u8("Battery Level")
        guard rawValue <= 100 else { throw WireError(.invalidValue, at: 0, "Battery Level above 100 %") }
        try r.expectEnd()
    }

    public var encodedLength: Int { 1 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        guard rawValue <= 100 else { throw WireError(.valueOutOfRange, at: w.count, "Battery Level above 100 %") }
        try w.u8(rawValue)
    }
}

/// System ID (0x2A23): eight bytes, a 40-bit manufacturer-defined identifier (first, LE) and
/// the 24-bit Organizationally Unique Identifier (last, LE).
public struct SystemID: Hashable, Sendable, WireEncodable {
    /// The 40-bit manufacturer-defined identifier.
    public var manufacturerIdentifier: UInt64
    /// The 24-bit Organizationally Unique Identifier (IEEE OUI).
    public var organizationallyUniqueIdentifier: UInt32

    /// A System ID as given.
    public init(manufacturerIdentifier: UInt64, organizationallyUniqueIdentifier: UInt32) {
        self.manufacturerIdentifier = manufacturerIdentifier
        self.organizationallyUniqueIdentifier = organizationallyUniqueIdentifier
    }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        let lo = try r.u32("System ID manufacturer identifier")
        let hi = try r.u8("System ID manufacturer identifier")
        manufacturerIdentifier = UInt64(lo) | UInt64(hi) << 32
        organizationallyUniqueIdentifier = try r.u24("System ID OUI")
        try r.expectEnd()
    }

    public var encodedLength: Int { 8 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        guard manufacturerIdentifier <= 0xFF_FFFF_FFFF else {
            throw WireError(.valueOutOfRange, at: w.count, "System ID manufacturer identifier does not fit 40 bits")
        }
        try w.u32(UInt32(truncatingIfNeeded: manufacturerIdentifier))
        try w.u8(UInt8(truncatingIfNeeded: manufacturerIdentifier >> 32))
        try w.u24(organizationallyUniqueIdentifier)
    }

    var fields: [Field] {
        [
            Field("manufacturer_identifier", .text(Display.hex(manufacturerIdentifier, 10))),
            Field("organizationally_unique_identifier", .text(Display.hex(UInt64(organizationallyUniqueIdentifier), 6))),
        ]
    }
    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String {
        "manufacturer \(Display.hex(manufacturerIdentifier, 10)), OUI \(Display.hex(UInt64(organizationallyUniqueIdentifier), 6))"
    }
}

/// IEEE 11073-20601 Regulatory Certification Data List (0x2A2A): an opaque IEEE 11073 structure,
/// kept as raw bytes (a view, valid while the caller's buffer is alive).
public struct RegulatoryCertificationData: WireEncodable {
    /// The raw IEEE 11073-20601 structure.
    public var bytes: UnsafeRawBufferPointer
    /// A view of `bytes` (not copied: valid while they are).
    @inlinable public init(parsing bytes: UnsafeRawBufferPointer) { self.bytes = bytes }
    public var encodedLength: Int { bytes.count }
    public func encode(into w: inout ByteWriter) throws(WireError) { try w.bytes(bytes) }
}

/// PnP ID (0x2A50): Vendor ID Source (u8: 1 Bluetooth SIG company identifier, 2 USB-IF vendor
/// ID), Vendor ID, Product ID, Product Version (u16 each; version 0xJJMN = JJ.M.N).
public struct PnPID: Hashable, Sendable, WireEncodable {
    /// Who assigned the vendor ID: 1 Bluetooth SIG, 2 USB Implementers Forum.
    public var vendorIDSource: UInt8
    /// The vendor ID (a company identifier when the source is the Bluetooth SIG).
    public var vendorID: UInt16
    /// The vendor's product ID.
    public var productID: UInt16
    /// The vendor's product version.
    public var productVersion: UInt16

    /// A PnP ID as given.
    public init(vendorIDSource: UInt8, vendorID: UInt16, productID: UInt16, productVersion: UInt16) {
        self.vendorIDSource = vendorIDSource
        self.vendorID = vendorID
        self.productID = productID
        self.productVersion = productVersion
    }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        vendorIDSource = try r.u8("PnP ID vendor ID source")
        vendorID = try r.u16("PnP ID vendor ID")
        productID = try r.u16("PnP ID product ID")
        productVersion = try r.u16("PnP ID product version")
        try r.expectEnd()
    }

    /// "Bluetooth SIG", "USB Implementers Forum" or the raw value.
    public var vendorIDSourceName: String {
        switch vendorIDSource {
        case 1: "Bluetooth SIG"
        case 2: "USB Implementer's Forum"
        default: "reserved"
        }
    }
    /// The company's name for SIG-assigned vendor IDs.
    public var vendorName: String? { vendorIDSource == 1 ? AssignedNumbers.companyName(vendorID) : nil }
    /// "1.2.3" from 0x0123.
    public var versionString: String { "\(productVersion >> 8).\((productVersion >> 4) & 0xF).\(productVersion & 0xF)" }

    public var encodedLength: Int { 7 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(vendorIDSource)
        try w.u16(vendorID)
        try w.u16(productID)
        try w.u16(productVersion)
    }

    var fields: [Field] {
        [
            Field("vendor_id_source", .named(UInt64(vendorIDSource), vendorIDSourceName)),
            Field("vendor_id", vendorName.map { .named(UInt64(vendorID), $0) } ?? .uint(UInt64(vendorID))),
            Field("product_id", .uint(UInt64(productID))),
            Field("product_version", .text(versionString)),
        ]
    }
    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String {
        "vendor \(Display.hex(UInt64(vendorID), 4))\(vendorName.map { " (\($0))" } ?? "") [\(vendorIDSourceName)], "
            + "product \(Display.hex(UInt64(productID), 4)), version \(versionString)"
    }
}

/// The Appearance characteristic (0x2A01): a u16 ``Appearance`` (BluetoothWire's type, shared
/// with advertising data), category in bits 15...6, subcategory in bits 5...0.
public struct AppearanceCharacteristic: Hashable, Sendable, WireEncodable {
    /// The appearance value (category and subcategory).
    public var appearance: Appearance
    /// An Appearance characteristic value.
    @inlinable public init(_ appearance: Appearance) { self.appearance = appearance }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        appearance = Appearance(rawValue: try r.u16("Appearance"))
        try r.expectEnd()
    }
    /// The subcategory's name, else the category's (AssignedNumbers.appearanceName).
    public var name: String? { AssignedNumbers.appearanceName(appearance.rawValue) }
    public var encodedLength: Int { 2 }
    public func encode(into w: inout ByteWriter) throws(WireError) { try w.u16(appearance.rawValue) }
    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String { "\(name ?? "unknown appearance") (\(Display.hex(UInt64(appearance.rawValue), 4)))" }

    var fields: [Field] {
        let v = appearance
        var f = [Field("appearance", name.map { .named(UInt64(v.rawValue), $0) } ?? .uint(UInt64(v.rawValue))),
                 Field("category", .uint(UInt64(v.category))), Field("subcategory", .uint(UInt64(v.subcategory)))]
        if let c = v.categoryName { f.append(Field("category_name", .text(c))) }
        return f
    }
}

/// Current Time (0x2A2B): Exact Time 256 (Date Time, Day of Week u8, Fractions256 u8) and
/// Adjust Reason (u8 bits: manual update, external reference, time zone change, DST change).
/// Day of week 0 = unknown, 1...7 = Monday...Sunday, 8...255 reserved (kept, reported).
public struct CurrentTime: Hashable, Sendable, WireEncodable {
    /// The date and time.
    public var dateTime: DateTime
    /// Day of week: 0 unknown, 1...7 Monday...Sunday.
    public var dayOfWeek: UInt8
    /// 1/256 s.
    public var fractions256: UInt8
    /// Why the time was last adjusted.
    public var adjustReason: AdjustReason

    /// Adjust Reason bits.
    public struct AdjustReason: OptionSet, Hashable, Sendable {
        public var rawValue: UInt8
        @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Manual time update (bit 0).
        public static let manualTimeUpdate = Self(rawValue: 1 << 0)
        /// External reference time update (bit 1).
        public static let externalReferenceTimeUpdate = Self(rawValue: 1 << 1)
        /// Change of time zone (bit 2).
        public static let changeOfTimeZone = Self(rawValue: 1 << 2)
        /// Change of DST (bit 3).
        public static let changeOfDST = Self(rawValue: 1 << 3)
        static let names: [Int: String] = [0: "manual time update", 1: "external reference time update",
                                           2: "change of time zone", 3: "change of DST"]
    }

    /// A Current Time value as given.
    public init(dateTime: DateTime, dayOfWeek: UInt8 = 0, fractions256: UInt8 = 0, adjustReason: AdjustReason = []) {
        self.dateTime = dateTime
        self.dayOfWeek = dayOfWeek
        self.fractions256 = fractions256
        self.adjustReason = adjustReason
    }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        dateTime = try DateTime.read(&r)
        dayOfWeek = try r.u8("day of week")
        fractions256 = try r.u8("fractions256")
        adjustReason = AdjustReason(rawValue: try r.u8("adjust reason"))
        try r.expectEnd()
    }

    /// "Monday"... "Sunday", "unknown", or "reserved (N)".
    public var dayOfWeekName: String {
        switch dayOfWeek {
        case 0: "unknown"
        case 1: "Monday"
        case 2: "Tuesday"
        case 3: "Wednesday"
        case 4: "Thursday"
        case 5: "Friday"
        case 6: "Saturday"
        case 7: "Sunday"
        default: "reserved"
        }
    }

    public var encodedLength: Int { 10 }
    public func encode(into w: inout ByteWriter) throws(WireError) {
        try dateTime.write(&w)
        try w.u8(dayOfWeek)
        try w.u8(fractions256)
        try w.u8(adjustReason.rawValue)
    }

    var fields: [Field] {
        [
            Field("date_time", .text(dateTime.description)),
            Field("day_of_week", .named(UInt64(dayOfWeek), dayOfWeekName)),
            Field("fractions256", .uint(UInt64(fractions256))),
            Field("adjust_reason", Display.bitField(UInt64(adjustReason.rawValue), width: 8, AdjustReason.names)),
        ]
    }
    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String {
        var s = "\(dateTime.description) +\(fractions256)/256 s, \(dayOfWeekName)"
        let reasons = Display.bitNames(UInt64(adjustReason.rawValue), width: 8, AdjustReason.names)
        if !reasons.isEmpty { s += " (" + reasons.joined(separator: ", ") + ")" }
        return s
    }
}
