// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothProfiles
// Fuzz target: characteristic value decoders (BluetoothProfiles). The first input byte picks
// the UUID from CharacteristicDecoder.supportedUUIDs, the rest is the value. Whatever parses
// must re-encode to exactly the input, parse again, and describe itself without trapping.
// Built in one module with the BluetoothWire and BluetoothProfiles sources by Fuzz/run.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let all = UnsafeRawBufferPointer(start: data, count: size)
    let uuids = CharacteristicDecoder.supportedUUIDs
    let uuid = BluetoothUUID(uuids[Int(all[0]) % uuids.count])
    let value = UnsafeRawBufferPointer(rebasing: all[1...])
    do throws(WireError) {
        guard let d = try CharacteristicDecoder.decode(uuid: uuid, value: value) else {
            preconditionFailure("no decoder for a supported UUID")
        }
        precondition(d.uuid == uuid || uuid.uuid16 == 0x2A1E || uuid.uuid16 == 0x2A1C)
        let bytes = try d.encoded()
        precondition(bytes.elementsEqual(value), "re-encoding differs from the input")
        let same = bytes.withUnsafeBytes { (b: UnsafeRawBufferPointer) -> Bool in
            do throws(WireError) {
                guard let again = try CharacteristicDecoder.decode(uuid: uuid, value: b) else { return false }
                return again.summary == d.summary
            } catch {
                return false
            }
        }
        precondition(same, "re-encoded value does not parse back the same")
        _ = d.fields
        _ = d.fieldTitle
        if case .heartRateMeasurement(let m) = d {
            var n = 0
            for _ in m.rrIntervals { n += 1 }
            precondition(n == m.rrIntervals.count)
        }
    } catch {
        precondition(error.offset >= 0 && error.offset <= value.count, "error offset outside the value")
    }
    return 0
}
