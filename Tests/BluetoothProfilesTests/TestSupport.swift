import BluetoothWire
@testable import BluetoothProfiles

/// Runs `body` over the bytes of `array`. Closures use untyped `throws`: typed-throws closure
/// thunks crash the 6.3 compiler.
func withBytes<R>(_ array: [UInt8], _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
    try array.withUnsafeBytes { try body($0) }
}

/// Hex literal for test vectors: `h("04 3e 0a")`.
func h(_ s: String) -> [UInt8] {
    switch Hex.parse(s) {
    case .success(let b): return b
    case .failure(let e): preconditionFailure("bad test hex \(s): \(e)")
    }
}

/// The `WireError` a parse throws, or nil when it succeeds.
func wireError<R>(_ array: [UInt8], _ body: (UnsafeRawBufferPointer) throws -> R) -> WireError? {
    do { _ = try withBytes(array, body); return nil } catch let e as WireError { return e } catch {
        preconditionFailure("unexpected error type \(error)")
    }
}

func encode(_ value: some WireEncodable) throws -> [UInt8] { try value.encoded() }

/// Decodes `bytes` as characteristic `uuid`, returning the summary, the fields and the
/// re-encoded bytes (views are only valid inside the closure).
func decoded(_ uuid: UInt16, _ bytes: [UInt8]) throws -> (summary: String, title: String, fields: [Field], reencoded: [UInt8])? {
    try withBytes(bytes) { buf in
        guard let d = try CharacteristicDecoder.decode(uuid: BluetoothUUID(uuid), value: buf) else { return nil }
        return (d.summary, d.fieldTitle, d.fields, try d.encoded())
    }
}

func field(_ fields: [Field], _ name: String) -> FieldValue? { fields.first { $0.name == name }?.value }

let sampleTime = DateTime(year: 2026, month: 11, day: 29, hours: 17, minutes: 33, seconds: 5)
/// 2026-11-29 17:33:05 on the wire.
let sampleTimeBytes = h("EA 07 0B 1D 11 21 05")
