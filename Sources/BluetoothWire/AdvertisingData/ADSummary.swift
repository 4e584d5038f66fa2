/// What a scanner shows of a device, read from its advertising data and scan response in
/// one pass without allocating: views into the two buffers, valid while they are.
///
/// The first occurrence wins (advertising data before scan response), a complete local
/// name beats a shortened one; a malformed structure sets ``malformed`` and the rest of
/// that buffer is not read (what came before still counts).
public struct ADSummary {
    /// The two data sets, in order.
    public let advertisingData: UnsafeRawBufferPointer
    /// The scan response data.
    public let scanResponseData: UnsafeRawBufferPointer
    /// The complete local name, else the shortened one (UTF-8 as sent).
    public private(set) var name: UnsafeRawBufferPointer?
    private var nameIsComplete = false
    /// The Flags AD type.
    public private(set) var flags: ADFlags?
    /// TX Power Level.
    public private(set) var txPower: Int8?
    /// The Appearance AD type.
    public private(set) var appearance: Appearance?
    /// The first Manufacturer Specific Data structure.
    public private(set) var manufacturerData: ADManufacturerData?
    /// Service UUID lists (16/32/128-bit, complete or not) are present.
    public private(set) var hasServiceUUIDs = false
    /// Service Data structures are present.
    public private(set) var hasServiceData = false
    /// A structure did not parse.
    public private(set) var malformed = false
    /// Service Data – 16-bit UUID structures, parsed or not (where sensor broadcasts live).
    public private(set) var serviceData16Count = 0
    /// Manufacturer Specific Data structures, parsed or not.
    public private(set) var manufacturerDataCount = 0
    /// The first distinct service UUIDs, kept inline (a scan line lists them twice); more
    /// than fit are found again by walking the data.
    private var firstUUIDs = InlineArray<8, BluetoothUUID>(repeating: BluetoothUUID(0))
    private var firstUUIDCount = 0
    private var moreUUIDs = false

    /// The summary of `advertisingData` then `scanResponseData`.
    public init(_ advertisingData: UnsafeRawBufferPointer, _ scanResponseData: UnsafeRawBufferPointer) {
        self.advertisingData = advertisingData
        self.scanResponseData = scanResponseData
        read(advertisingData)
        read(scanResponseData)
    }

    /// ``txPower`` of the summary of these data, without summarizing the rest (a device
    /// snapshot needs only this).
    public static func txPower(_ advertisingData: UnsafeRawBufferPointer, _ scanResponseData: UnsafeRawBufferPointer) -> Int8? {
        firstTXPower(advertisingData) ?? firstTXPower(scanResponseData)
    }

    /// The first well-formed TX Power Level before the end or a layout error (as ``read(_:)``).
    private static func firstTXPower(_ bytes: UnsafeRawBufferPointer) -> Int8? {
        var it = AdvertisingData(bytes).makeIterator()
        while let s = try? it.next() {
            if s.type.rawValue == 0x0A, let p = try? s.txPowerLevel() { return p }
        }
        return nil
    }

    private mutating func read(_ bytes: UnsafeRawBufferPointer) {
        var it = AdvertisingData(bytes).makeIterator()
        while true {
            let s: ADStructure
            do throws(WireError) {
                guard let next = try it.next() else { return }
                s = next
            } catch {
                malformed = true
                return
            }
            switch s.type.rawValue {
            case 0x01:
                if flags == nil { flags = try? s.flags() }
            case 0x02 ... 0x07:
                if let list = try? s.serviceUUIDs() {
                    for u in list where !moreUUIDs { keep(u) }
                } else { malformed = true }
            case 0x08, 0x09:
                let complete = s.type.rawValue == 0x09
                if name == nil || (complete && !nameIsComplete) {
                    name = s.data
                    nameIsComplete = complete
                }
            case 0x0A:
                if txPower == nil { txPower = try? s.txPowerLevel() }
            case 0x16, 0x20, 0x21:
                if s.type.rawValue == 0x16 { serviceData16Count &+= 1 }
                if (try? s.serviceData()) != nil { hasServiceData = true } else { malformed = true }
            case 0x19:
                if appearance == nil { appearance = try? s.appearance() }
            case 0xFF:
                manufacturerDataCount &+= 1
                if manufacturerData == nil {
                    if let m = try? s.manufacturerData() { manufacturerData = m } else { malformed = true }
                }
            default:
                break
            }
        }
    }

    private mutating func keep(_ u: BluetoothUUID) {
        hasServiceUUIDs = true
        var i = 0
        while i < firstUUIDCount {
            if firstUUIDs[i] == u { return }
            i &+= 1
        }
        guard firstUUIDCount < 8 else { moreUUIDs = true; return }
        firstUUIDs[firstUUIDCount] = u
        firstUUIDCount &+= 1
    }

    /// The service UUIDs, when there are at most eight distinct ones and all are 16-bit
    /// (nearly every advertisement): count, then their values in order of first
    /// appearance; nil otherwise. Read without a closure, for the scan line.
    public var serviceUUIDs16: (count: Int, values: InlineArray<8, UInt16>)? {
        guard !moreUUIDs else { return nil }
        var values = InlineArray<8, UInt16>(repeating: 0)
        var i = 0
        while i < firstUUIDCount {
            guard let v = firstUUIDs[i].uuid16 else { return nil }
            values[i] = v
            i &+= 1
        }
        return (firstUUIDCount, values)
    }

    /// Calls `body` with each service UUID once, in order of first appearance.
    public func forEachServiceUUID(_ body: (BluetoothUUID) -> Void) {
        guard hasServiceUUIDs else { return }
        if !moreUUIDs {
            for i in 0 ..< firstUUIDCount { body(firstUUIDs[i]) }
            return
        }
        var seen = Distinct()
        forEach(serviceData: false) { u, _ in if seen.insert(u) { body(u) } }
    }

    /// Calls `body` with each service data UUID once, in order of first appearance.
    public func forEachServiceDataUUID(_ body: (BluetoothUUID) -> Void) {
        guard hasServiceData else { return }
        var seen = Distinct()
        forEach(serviceData: true) { u, _ in if seen.insert(u) { body(u) } }
    }

    /// Distinct service UUIDs.
    public var serviceUUIDCount: Int {
        if !moreUUIDs { return firstUUIDCount }
        var n = 0
        forEachServiceUUID { _ in n += 1 }
        return n
    }

    /// UUIDs seen so far: the first eight inline, more in a set (a hostile advertiser's
    /// 1650 bytes of UUIDs cost one pass, not one per UUID).
    struct Distinct {
        var inline = InlineArray<8, BluetoothUUID>(repeating: BluetoothUUID(0))
        var count = 0
        var more: Set<BluetoothUUID> = []

        /// True when `u` was not seen before.
        mutating func insert(_ u: BluetoothUUID) -> Bool {
            var i = 0
            while i < min(count, 8) {
                if inline[i] == u { return false }
                i += 1
            }
            if count < 8 {
                inline[count] = u
                count += 1
                return true
            }
            return more.insert(u).inserted
        }
    }

    /// Every UUID of the kind asked, with its position, duplicates included; stops where
    /// ``init(_:_:)`` stopped reading.
    private func forEach(serviceData: Bool, _ body: (BluetoothUUID, Int) -> Void) {
        var index = 0
        Self.forEach(in: advertisingData, serviceData: serviceData, &index, body)
        Self.forEach(in: scanResponseData, serviceData: serviceData, &index, body)
    }

    private static func forEach(in bytes: UnsafeRawBufferPointer, serviceData: Bool, _ index: inout Int,
                                _ body: (BluetoothUUID, Int) -> Void) {
        var it = AdvertisingData(bytes).makeIterator()
        while let s = try? it.next() {
            switch s.type.rawValue {
            case 0x02 ... 0x07:
                guard !serviceData, let list = try? s.serviceUUIDs() else { break }
                for u in list {
                    body(u, index)
                    index += 1
                }
            case 0x16, 0x20, 0x21:
                guard serviceData, let d = try? s.serviceData() else { break }
                body(d.uuid, index)
                index += 1
            default:
                continue
            }
        }
    }
}
