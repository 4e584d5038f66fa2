// The GameKit peer chat on BLE: two people send text both ways. One side waits
// (`--wait`: a peripheral serving the Nordic UART Service), the other finds it and
// connects; lines typed are sent, lines received printed, connects and disconnects shown.
// Messages end with a newline and go in pieces as large as the link takes, so this talks
// to `hcigatt chat` (and to phone UART apps) too.
//
//   PeerChat --wait [--name N] [--transport SPEC]
//   PeerChat [NAME] [--transport SPEC]
import BluetoothLE
import ExampleSupport

let uart = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
let rx = BluetoothUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!  // centrals write
let tx = BluetoothUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!  // the waiting side notifies

let args = ExampleArguments(CommandLine.arguments.filter { $0 != "--wait" })
let waiting = CommandLine.arguments.contains("--wait")

func wait() async throws(BluetoothError) {
    let service = GATTLocalService(uuid: uart, characteristics: [
        GATTLocalCharacteristic(uuid: rx, properties: [.write, .writeWithoutResponse]),
        GATTLocalCharacteristic(uuid: tx, properties: .notify),
    ])
    let manager = try await PeripheralManager(name: args.options["name"] ?? "PeerChat", services: [service], options: args.bluetooth)
    try await manager.startAdvertising()
    say("waiting as \"\(manager.name)\"")
    let typing = Task {
        for await line in standardInputLines() {
            for central in manager.centrals {
                for piece in MessageFramer.pieces(line, size: min(manager.maximumUpdateValueLength(for: central), 512)) {
                    _ = try? await manager.updateValue(piece, for: tx, onSubscribedCentrals: [central])
                }
            }
        }
    }
    var inbox: [Central: MessageFramer] = [:]
    for await event in manager.events {
        switch event {
        case .connected(let c): say("* \(c) joined")
        case .disconnected(let c, _): say("* \(c) left"); inbox[c] = nil
        case .wrote(let c, rx, let value, _):
            for m in inbox[c, default: MessageFramer()].append(value) { say(MessageFramer.printable(m)) }
        default: break
        }
    }
    typing.cancel()
    await manager.close()
}

func join() async throws(BluetoothError) {
    let central = try await CentralManager(args.bluetooth)
    let filter = args.positional.first.map { ScanFilter(name: $0) } ?? ScanFilter(services: [uart])
    let peer = try await central.connect(try await central.find(filter))
    say("* connected to \(peer)")
    let incoming = try await peer.notifications(for: try await peer.characteristic(tx, in: uart))
    let write = try await peer.characteristic(rx, in: uart)
    let typing = Task {
        for await line in standardInputLines() {
            do {
                for piece in MessageFramer.pieces(line, size: peer.maximumWriteValueLength) {
                    try await peer.writeValue(piece, for: write, type: .withoutResponse)
                }
            } catch {
                say("* not sent: \(error)")
                return
            }
        }
    }
    var messages = MessageFramer()
    do {
        for try await piece in incoming {
            for m in messages.append(piece) { say(MessageFramer.printable(m)) }
        }
        say("* the peer ended the chat")
    } catch {
        say("* disconnected: \(error)")
    }
    typing.cancel()
    await central.close()
}

do {
    if waiting { try await wait() } else { try await join() }
} catch {
    fail(error)
}
