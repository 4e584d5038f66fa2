// Apple's Health Thermometer client, on Linux: find a thermometer (service 1809), connect,
// read its maker (2A29) and name (2A00), set the measurement interval (2A21) to 2 s, and
// print temperatures: 2A1C indications and 2A1E intermediate notifications. The device is
// remembered (--state FILE): the next run connects to it straight away, and a link that
// drops is connected again.
//
//   HealthThermometerClient [--transport SPEC] [--count N] [--state FILE]
import BluetoothLE
import ExampleSupport
import Glibc

let thermometer = BluetoothUUID(0x1809)
let temperatureMeasurement = BluetoothUUID(0x2A1C)
let intermediateTemperature = BluetoothUUID(0x2A1E)
let measurementInterval = BluetoothUUID(0x2A21)

let args = ExampleArguments()
let wanted = args.int("count", default: 5)
let stateFile = args.options["state"] ?? "/tmp/HealthThermometerClient.last"

/// One temperature as text ("36.4 °C"); nil when the value does not parse.
func temperature(_ value: [UInt8]) -> String? {
    value.withUnsafeBytes { try? TemperatureMeasurement(parsing: $0) }?.summary
}

func readText(_ peripheral: Peripheral, _ uuid: BluetoothUUID, in service: BluetoothUUID) async -> String {
    guard let c = try? await peripheral.characteristic(uuid, in: service),
          let v = try? await peripheral.readValue(for: c) else { return "?" }
    return String(decoding: v, as: UTF8.self)
}

/// Connects to the remembered device, or to the first thermometer heard.
func connect(_ central: CentralManager) async throws(BluetoothError) -> Peripheral {
    if let text = readTextFile(stateFile), let last = LEAddress(text) {
        say("reconnecting to \(last)")
        if let p = try? await central.connect(to: last) { return p }
        say("\(last) is not there; scanning")
    }
    let heard = try await central.find(ScanFilter(services: [thermometer]))
    say("found \(heard.name ?? "a thermometer") at \(heard.address)")
    let p = try await central.connect(heard)
    writeTextFile(stateFile, "\(heard.address)")
    return p
}

var received = 0
do {
    let central = try await CentralManager(args.bluetooth)
    var attempts = 0
    while received < wanted {
        let peripheral = try await connect(central)
        say("connected to \(peripheral)")
        say("manufacturer: \(await readText(peripheral, BluetoothUUID(0x2A29), in: BluetoothUUID(0x180A)))")
        say("device name: \(await readText(peripheral, BluetoothUUID(0x2A00), in: BluetoothUUID(0x1800)))")
        let interval = try await peripheral.characteristic(measurementInterval, in: thermometer)
        try await peripheral.writeValue([2, 0], for: interval)
        say("measurement interval set to 2 s")
        let measurements = try await peripheral.notifications(for: try await peripheral.characteristic(temperatureMeasurement, in: thermometer))
        let intermediate = try await peripheral.notifications(for: try await peripheral.characteristic(intermediateTemperature, in: thermometer))
        // Both streams into one loop; each line says which it was.
        let lines = AsyncStream<String> { continuation in
            let a = Task {
                do { for try await v in measurements { continuation.yield("temperature: \(temperature(v) ?? "malformed")") } } catch {
                    continuation.yield("link lost: \(error)")
                }
                continuation.finish()
            }
            let b = Task {
                do { for try await v in intermediate { continuation.yield("intermediate: \(temperature(v) ?? "malformed")") } } catch {}
            }
            continuation.onTermination = { _ in a.cancel(); b.cancel() }
        }
        for await line in lines {
            say(line)
            if line.hasPrefix("temperature") { received += 1 }
            if received >= wanted { break }
        }
        if received >= wanted { await peripheral.disconnect(); break }
        attempts += 1
        guard attempts < 3 else { throw BluetoothError(.disconnected, "the thermometer keeps going away") }
        say("connecting again")
    }
    await central.close()
} catch {
    fail(error)
}
