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

/// SplitMix64: a deterministic generator for cut points and random inputs (no Foundation).
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func next(below n: Int) -> Int { Int(next() % UInt64(n)) }
}
