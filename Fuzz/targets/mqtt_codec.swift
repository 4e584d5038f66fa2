// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothTransport BluetoothSecurity BluetoothProfiles BluetoothHost BluetoothGATT BluetoothLE HCIGATTFormat HCIGATTGateway
// Fuzz target: the MQTT codec on bytes a broker could send. The first byte picks the
// version and how the rest is cut into reads; the frame reader then splits packets and each
// is decoded. Checked: nothing traps; a packet is never longer than the limit; a PUBLISH
// that decodes re-encodes to the same bytes (MQTT 3.1.1, where nothing is skipped).
@testable import HCIGATTGateway

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let mode = bytes.first else { return 0 }
    let version: MQTTVersion = mode & 1 == 0 ? .v311 : .v5
    let chunk = Int(mode >> 1) % 17 + 1
    var reader = MQTTFrameReader(maximumPacketSize: 512)
    var i = 1
    while i < bytes.count {
        let end = min(i + chunk, bytes.count)
        bytes[i ..< end].withUnsafeBytes { reader.append($0) }
        i = end
        while true {
            let packet: [UInt8]
            do {
                guard let p = try reader.next() else { break }
                packet = p
            } catch {
                return 0  // a broken stream ends the connection
            }
            precondition(packet.count <= 512, "a packet over the limit")
            guard let incoming = try? MQTTIncoming.decode(packet, version: version) else { continue }
            if version == .v311, case .publish(let p) = incoming, packet[1] & 0x80 == 0 {
                let again = p.payload.withUnsafeBytes {
                    MQTTEncode.publish(topic: p.topic, payload: $0, qos: p.qos, retain: p.retain, dup: p.dup,
                                       packetID: p.packetID, version: .v311)
                }
                precondition(again == packet, "PUBLISH does not round-trip")
            }
        }
    }
    return 0
}
