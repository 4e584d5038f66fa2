// The blood-pressure monitor client: find a device with the Blood Pressure service
// (1810), read what it supports (Blood Pressure Feature, 2A49) first, then print each
// measurement it indicates (2A35). A device that keeps its readings for bonded centrals
// refuses the subscription until the link is encrypted: the library pairs then (Just
// Works) and retries; --bond-dir DIR keeps the bond (and the cuff's database, checked by
// its Database Hash) for the next run.
//
//   BloodPressureMonitor [--transport SPEC] [--count N] [--bond-dir DIR]
import BluetoothLE
import ExampleSupport

let bloodPressure = BluetoothUUID(0x1810)
let measurementUUID = BluetoothUUID(0x2A35)
let featureUUID = BluetoothUUID(0x2A49)

let args = ExampleArguments()
let wanted = args.int("count", default: 3)

/// Blood Pressure Feature bits (GATT Specification Supplement §3.31).
func features(_ value: [UInt8]) -> String {
    guard value.count >= 2 else { return "malformed" }
    let bits = UInt16(value[0]) | UInt16(value[1]) << 8
    let names = ["body movement detection", "cuff fit detection", "irregular pulse detection",
                 "pulse rate range detection", "measurement position detection", "multiple bonds"]
    let supported = names.enumerated().filter { bits & (1 << $0.offset) != 0 }.map(\.element)
    return supported.isEmpty ? "none" : supported.joined(separator: ", ")
}

do {
    let central = try await CentralManager(args.bluetooth)
    let monitor = try await central.connect(try await central.find(ScanFilter(services: [bloodPressure])))
    say("connected to \(monitor)")
    let feature = try await monitor.characteristic(featureUUID, in: bloodPressure)
    // A bonded cuff's database is discovered whole, and next time taken from the bond.
    if let source = monitor.databaseSource { say("database: \(source)") }
    say("features: \(features(try await monitor.readValue(for: feature)))")
    let measurement = try await monitor.characteristic(measurementUUID, in: bloodPressure)
    var seen = 0
    for try await value in try await monitor.notifications(for: measurement) {
        guard let m = value.withUnsafeBytes({ try? BloodPressureMeasurement(parsing: $0) }) else {
            say("malformed measurement: \(value)")
            continue
        }
        say("blood pressure: \(m.summary)")
        seen += 1
        if seen == wanted { break }
    }
    say("link security: \(monitor.link.security)")
    await monitor.disconnect()
    await central.close()
} catch {
    fail(error)
}
