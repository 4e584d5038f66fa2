// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothProfiles
// Fuzz target: the sensor readings broadcast in advertisements (BTHome v2 plain and
// encrypted, Ruuvi RAWv2, pvvx/ATC1441). The input is advertising data; every sensor frame
// found is described into the JSON writer and a field tree without trapping, errors point
// inside the input, and the JSON is well formed. Half the inputs are re-wrapped as one
// encrypted BTHome frame under a fixed key, so the decrypted objects are fuzzed too (CCM's
// tag cannot be forged by mutation).
let key: [UInt8] = Array(0 ..< 16)
let address = BluetoothAddress(rawValue: 0x5448_E68F_80A5)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let all = UnsafeRawBufferPointer(start: data, count: size)
    var keys = SensorKeys()
    keys.set(key, for: address)
    check(all, keys)
    guard size >= 2, all[0] & 1 == 1, size <= 200 else { return 0 }
    // Encrypt the rest as BTHome objects: service data D2 FC 41 | ciphertext | counter | MIC.
    let plain = UnsafeRawBufferPointer(rebasing: all[1...])
    var frame: [UInt8] = [UInt8(plain.count + 12), 0x16, 0xD2, 0xFC, 0x41] + [UInt8](repeating: 0, count: plain.count + 8)
    let counter: [UInt8] = [all[0], 0x22, 0x11, 0x00]
    var nonce: [UInt8] = [0x54, 0x48, 0xE6, 0x8F, 0x80, 0xA5, 0xD2, 0xFC, 0x41] + counter
    let ok = frame.withUnsafeMutableBytes { f in
        key.withUnsafeBytes { k in
            nonce.withUnsafeMutableBytes { n in
                BluetoothCrypto.aesCCMEncrypt(key: k, nonce: UnsafeRawBufferPointer(n), plaintext: plain,
                                              into: UnsafeMutableRawBufferPointer(rebasing: f[5 ..< 5 + plain.count]),
                                              mic: UnsafeMutableRawBufferPointer(rebasing: f[(9 + plain.count)...]))
            }
        }
    }
    precondition(ok, "encryption failed")
    for i in 0 ..< 4 { frame[5 + plain.count + i] = counter[i] }
    frame.withUnsafeBytes { check($0, keys) }
    return 0
}

func check(_ bytes: UnsafeRawBufferPointer, _ keys: SensorKeys) {
    let ad = AdvertisingData(bytes)
    switch AdvertisedSensor.find(in: ad) {
    case .success(let sensor)?:
        var w = FieldWriter(format: .json, out: OutputBuffer(capacity: 256))
        w.out.raw("{\"x\":0")
        w.beginRecordContinuing()
        w.beginObject("sensor")
        sensor.describe(into: &w, address: address, keys: keys)
        w.end()
        w.endRecord()
        var text = FieldWriter(format: .text, out: OutputBuffer(capacity: 256))
        text.beginRecord(type: "sensor", title: "sensor")
        sensor.describe(into: &text, address: address, keys: keys)
        text.endRecord()
        let tree = FieldTree.build { sensor.describe(into: &$0, address: address, keys: keys) }
        precondition(tree.first?.name == "format")
        if case .bthome(let b) = sensor {
            precondition(b.version == 2)
            precondition(b.payloadOffset >= 0 && b.payloadOffset + b.payload.count <= bytes.count)
        }
        if let v = w.out.withBytes({ OutputBuffer.jsonOutputViolation($0, lines: false) }) { preconditionFailure(v) }
        let json = w.out.string
        precondition(json.hasPrefix("{\"x\":0,\"sensor\":{\"format\":\"") && json.hasSuffix("}}\n"), "not one JSON object: \(json)")
    case .failure(let e)?:
        precondition(e.offset >= 0 && e.offset <= bytes.count, "error offset outside the input")
    case nil:
        break
    }
}
