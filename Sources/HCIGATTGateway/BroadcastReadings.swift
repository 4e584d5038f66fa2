import BluetoothHost
import BluetoothProfiles
import BluetoothWire
import HCIGATTFormat

/// Readings from scan reports: a new reading when what a device broadcasts changes (a
/// sensor's packet id, counter or sequence number does with every measurement; a beacon's
/// telemetry counts its frames), per device and measurement, so a beacon alternating two
/// frames is two steady measurements and not a new reading per report. The scan reports
/// a device again for other reasons too (its scan response, a duplicate). No I/O: the
/// clocks come in.
///
/// What counts, in order: a decoded sensor frame (BTHome v2, Ruuvi RAWv2, pvvx, ATC1441),
/// an iBeacon, an Eddystone frame, and (unless `onlySensors`) any other advertiser as an
/// `advertisement` reading: its name, address type, services, service data, manufacturer
/// data and TX power. Advertisement readings get no Home Assistant entities: a crowd of
/// phones would make thousands.
public struct BroadcastReadings: Sendable {
    /// What one report gives.
    public enum Outcome: Sendable {
        /// A new reading.
        case reading(PendingReading)
        /// The same as before, or nothing this publishes.
        case unchanged
        /// A frame that cannot be published, said once per device.
        case notPublished(String)
    }

    /// The most device measurements remembered; rotating private addresses would grow it
    /// without end.
    public static let capacity = 65536

    private struct Key: Hashable {
        var device: BluetoothAddress
        var kind: Kind
    }

    /// What a report was decoded as (the change detection's second key).
    private enum Kind: UInt8 {
        case sensor, iBeacon, eddystoneUID, eddystoneURL, eddystoneTLM, eddystoneETLM, eddystoneEID, eddystoneOther
        case advertisement
    }

    private struct Decoded {
        var kind: Kind
        var measurement: String
        var fields: [Field]
        var name: String?
        var manufacturer: String
        var model: String
    }

    private let keys: SensorKeys?
    /// Only decoded sensors and beacons; no `advertisement` readings.
    public let onlySensors: Bool
    private var last: [Key: Int] = [:]
    /// Per device, the hashes of the last two raw reports (what they were decoded from):
    /// the same bytes again are nothing new, without decoding them (with presence the
    /// scan reports every repeat). Two, so a beacon alternating two frames is caught too.
    private var lastRaw: [BluetoothAddress: (Int, Int)] = [:]
    private var warned: Set<BluetoothAddress> = []

    /// Readings decrypted with `keys` where a sensor encrypts; `onlySensors` leaves out
    /// advertisers that send no sensor or beacon frame.
    public init(keys: SensorKeys?, onlySensors: Bool = false) {
        self.keys = keys
        self.onlySensors = onlySensors
    }

    /// The reading `device`'s latest report makes; `now` is the monotonic clock (ns) the
    /// report's time is on, `wallMilliseconds` the wall clock at `now`.
    public mutating func reading(_ device: DiscoveredDevice, now: UInt64, wallMilliseconds: Int64) -> Outcome {
        // A bonded device's private address resolves to its identity: readings, numbers
        // and entities follow the identity, whatever address it uses now.
        let heard = device.address.address
        let address = device.identity?.address ?? heard
        var raw = Hasher()
        raw.combine(device.address)
        raw.combine(device.advertising)
        raw.combine(device.scanResponse)
        raw.combine(device.eventType.connectable)
        raw.combine(device.reportedTxPower)  // the rest of txPower is in the data
        let rawHash = raw.finalize()
        let seen = lastRaw[address]
        if let seen, seen.0 == rawHash || seen.1 == rawHash { return .unchanged }
        if seen == nil, lastRaw.count >= Self.capacity { lastRaw.removeAll(keepingCapacity: true) }
        lastRaw[address] = (rawHash, seen?.0 ?? rawHash)
        let keys = keys, onlySensors = onlySensors
        let found: Decoded? = device.withSummary { a in Self.decode(device, a, keys: keys, onlySensors: onlySensors) }
        guard let decoded = found else { return .unchanged }
        var h = Hasher()
        h.combine(FieldRenderer.jsonObject(decoded.fields))
        let fingerprint = h.finalize()
        let key = Key(device: address, kind: decoded.kind)
        guard last[key] != fingerprint else { return .unchanged }
        if last.count >= Self.capacity { last.removeAll(keepingCapacity: true) }
        last[key] = fingerprint
        if let error = decoded.fields.first(where: { $0.name == "error" }) {
            if warned.count >= Self.capacity { warned.removeAll(keepingCapacity: true) }
            guard warned.insert(address).inserted else { return .unchanged }
            return .notPublished("\(address): \(FieldRenderer.scalarText(error.value)) (not published)")
        }
        // When the report arrived (not when this got to it): the wall clock less the
        // report's age on the monotonic clock.
        let age = now > device.lastSeen ? Int64(clamping: (now - device.lastSeen) / 1_000_000) : 0
        var reading = PendingReading(
            device: address, heardAs: heard == address ? nil : heard, measurement: decoded.measurement,
            milliseconds: wallMilliseconds - age, rssi: device.rssi, fields: decoded.fields,
            info: HomeAssistantDevice(address: address, name: decoded.name, manufacturer: decoded.manufacturer, model: decoded.model),
            unit: nil)
        reading.discoverable = decoded.kind != .advertisement
        return .reading(reading)
    }

    private static func decode(_ device: DiscoveredDevice, _ a: ADSummary, keys: SensorKeys?, onlySensors: Bool) -> Decoded? {
        let name = a.name.map { String(decoding: $0, as: UTF8.self) }
        if let found = ScanFormatter.sensor(a), case .success(let sensor) = found {
            let fields = FieldTree.build { sensor.describe(into: &$0, address: device.address.address, keys: keys) }
            let format = sensor.format.description
            let (manufacturer, model) = switch format {
            case "bthome": ("BTHome", "BTHome v2 sensor")
            case "ruuvi": ("Ruuvi Innovations", "RuuviTag (data format 5)")
            case "pvvx": ("Xiaomi (pvvx firmware)", "Thermometer (pvvx custom format)")
            default: ("Xiaomi (ATC firmware)", "Thermometer (ATC1441 format)")
            }
            return Decoded(kind: .sensor, measurement: format, fields: fields, name: name, manufacturer: manufacturer, model: model)
        }
        if let beacon = a.manufacturerData?.iBeacon {
            let fields = members(FieldTree.build { beacon.describe("ibeacon", into: &$0) })
            return Decoded(kind: .iBeacon, measurement: "ibeacon", fields: fields, name: name, manufacturer: "iBeacon",
                           model: "iBeacon")
        }
        if let (kind, measurement, fields) = eddystone(a.advertisingData) ?? eddystone(a.scanResponseData) {
            return Decoded(kind: kind, measurement: measurement, fields: fields, name: name, manufacturer: "Eddystone",
                           model: "Eddystone beacon")
        }
        guard !onlySensors else { return nil }
        let fields = FieldTree.build { w in advertisement(device, a, into: &w) }
        let company = a.manufacturerData.flatMap { AssignedNumbers.companyName($0.companyID) }
        return Decoded(kind: .advertisement, measurement: "advertisement", fields: fields, name: name,
                       manufacturer: company ?? "Bluetooth LE", model: "advertiser")
    }

    /// The first Eddystone frame in `bytes`, its fields at the top level.
    private static func eddystone(_ bytes: UnsafeRawBufferPointer) -> (Kind, String, [Field])? {
        var it = AdvertisingData(bytes).makeIterator()
        while let s = try? it.next() {
            guard s.type.serviceDataUUIDWidth != nil, let data = try? s.serviceData(),
                  let frame = try? data.eddystone() else { continue }
            let (kind, measurement): (Kind, String) = switch frame {
            case .uid: (.eddystoneUID, "eddystone_uid")
            case .url: (.eddystoneURL, "eddystone_url")
            case .tlm: (.eddystoneTLM, "eddystone_tlm")
            case .encryptedTLM: (.eddystoneETLM, "eddystone_etlm")
            case .eid: (.eddystoneEID, "eddystone_eid")
            case .unknown: (.eddystoneOther, "eddystone")
            }
            return (kind, measurement, members(FieldTree.build { frame.describe("eddystone", into: &$0) }))
        }
        return nil
    }

    /// The members of a one-object list (a frame's fields, without the wrapper).
    private static func members(_ fields: [Field]) -> [Field] {
        if fields.count == 1, case .object(let inner) = fields[0].value { return inner }
        return fields
    }

    /// What any advertiser says about itself (no RSSI: it is the reading's own field).
    private static func advertisement(_ device: DiscoveredDevice, _ a: ADSummary, into w: inout FieldTree) {
        if let name = a.name { w.text("name", utf8: name) }
        w.text("address_type", device.address.kind.rawValue)
        w.bool("connectable", device.eventType.connectable)
        if let tx = device.txPower(a) { w.int("tx_power", Int64(tx)) }
        if let appearance = a.appearance { w.named("appearance", UInt64(appearance.rawValue), appearance.description) }
        if a.hasServiceUUIDs {
            w.beginList("services", count: a.serviceUUIDCount)
            a.forEachServiceUUID { w.uuid("", $0) }
            w.end()
        }
        if a.hasServiceData {
            w.beginList("service_data", count: 0)
            for bytes in [a.advertisingData, a.scanResponseData] {
                var it = AdvertisingData(bytes).makeIterator()
                while let s = try? it.next() {
                    guard s.type.serviceDataUUIDWidth != nil, let data = try? s.serviceData() else { continue }
                    w.beginObject("")
                    w.uuid("uuid", data.uuid)
                    w.bytes("data", data.payload)
                    w.end()
                }
            }
            w.end()
        }
        if let m = a.manufacturerData {
            w.beginObject("manufacturer")
            if let company = AssignedNumbers.companyLabel(m.companyID) {
                w.named("company_id", UInt64(m.companyID), company)
            } else {
                w.named("company_id", UInt64(m.companyID), literal: "unknown")
            }
            w.bytes("data", m.payload)
            w.end()
        }
    }
}
