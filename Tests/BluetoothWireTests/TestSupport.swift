@testable import BluetoothWire

/// Runs `body` over the bytes of `array` (tests only: production code passes its own buffers).
/// Closures here use untyped `throws`: typed-throws closure thunks crash the 6.3 compiler.
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

/// Encodes `value` via the `WireEncodable` protocol.
func encode(_ value: some WireEncodable) throws -> [UInt8] { try value.encoded() }
