// The SensorTag key demo: subscribe to the key press characteristic (FFE1 in service
// FFE0) and say what each value means: 0 released, 1 right, 2 left, 3 both.
//
//   SensorTagKeys [--transport SPEC] [--count N] [ADDRESS]
import BluetoothLE
import ExampleSupport

let keyService = BluetoothUUID(0xFFE0)
let keyPressState = BluetoothUUID(0xFFE1)

let args = ExampleArguments()
let wanted = args.int("count", default: 8)

func meaning(_ value: [UInt8]) -> String {
    switch value.first {
    case 0?: "released"
    case 1?: "right"
    case 2?: "left"
    case 3?: "both"
    default: "unknown (\(value))"
    }
}

do {
    let central = try await CentralManager(args.bluetooth)
    let peripheral: Peripheral
    if let text = args.positional.first {
        guard let address = LEAddress(text) else { throw BluetoothError(.invalidRequest, "not an address: \(text)") }
        peripheral = try await central.connect(to: address)
    } else {
        peripheral = try await central.connect(try await central.find(ScanFilter(services: [keyService])))
    }
    say("connected to \(peripheral)")
    let keys = try await peripheral.notifications(for: try await peripheral.characteristic(keyPressState, in: keyService))
    var seen = 0
    for try await value in keys {
        say("keys: \(meaning(value))")
        seen += 1
        if seen == wanted { break }
    }
    await peripheral.disconnect()
    await central.close()
} catch {
    fail(error)
}
