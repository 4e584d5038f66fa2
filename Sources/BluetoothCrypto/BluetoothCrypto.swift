import CBearSSL

/// The cryptographic building blocks of the host (AES-128, AES-CMAC, AES-CCM) on BearSSL:
/// its constant-time AES (AES-NI where the CPU has it), its CCM, and CMAC as the RFC 4493
/// mode around the block cipher (`CBearSSL/shim.h`). Controllers are not asked (Bumble's
/// virtual controller, like some real ones, has no LE Encrypt).
///
/// Byte order: keys, blocks and results are in the byte order of the algorithm (RFC 4493,
/// FIPS-197: first byte = most significant). The Bluetooth functions built on them say
/// where the specification sends values least significant octet first.
public enum BluetoothCrypto {
    /// A cryptographic operation failed. BearSSL's AES cannot fail once its arguments are
    /// checked; the callers (SMP, the Database Hash) keep their error paths for an
    /// implementation that can (a hardware engine, the controller's LE Encrypt).
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The operation that failed.
        public var operation: String
        public var description: String { "\(operation) failed" }
    }

    /// AES-CMAC (RFC 4493) of `message` under the 128-bit `key`.
    public static func aesCMAC(key: [UInt8], message: UnsafeRawBufferPointer) throws(Failure) -> [UInt8] {
        precondition(key.count == 16, "AES-CMAC needs a 16-byte key")
        var out = [UInt8](repeating: 0, count: 16)
        key.withUnsafeBufferPointer { k in
            out.withUnsafeMutableBufferPointer { o in
                hcigatt_aes_cmac(k.baseAddress, message.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                 message.count, o.baseAddress)
            }
        }
        return out
    }

    /// AES-CMAC of a byte array.
    public static func aesCMAC(key: [UInt8], message: [UInt8]) throws(Failure) -> [UInt8] {
        let result: Result<[UInt8], Failure> = message.withUnsafeBytes { m in
            do throws(Failure) { return .success(try aesCMAC(key: key, message: m)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// One AES-128 block: the security function e (Core Vol 3 Part H §2.2.1).
    public static func aes128(key: [UInt8], block: [UInt8]) throws(Failure) -> [UInt8] {
        precondition(key.count == 16 && block.count == 16, "AES-128 needs a 16-byte key and block")
        var out = [UInt8](repeating: 0, count: 16)
        key.withUnsafeBufferPointer { k in
            block.withUnsafeBufferPointer { b in
                out.withUnsafeMutableBufferPointer { o in hcigatt_aes128_encrypt(k.baseAddress, b.baseAddress, o.baseAddress) }
            }
        }
        return out
    }

    /// AES-128-CCM decryption (NIST SP 800-38C) with a 13-byte nonce and an M-byte tag
    /// (`mic.count`: 4, 6 ... 16): writes the plaintext of `ciphertext` into `out` (at least
    /// as long) and returns false, with `out` wiped, when the tag does not match or an
    /// argument is out of range. No allocation: the BTHome decoder runs it per advertisement.
    public static func aesCCMDecrypt(key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
                                     associatedData: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                                     ciphertext: UnsafeRawBufferPointer, mic: UnsafeRawBufferPointer,
                                     into out: UnsafeMutableRawBufferPointer) -> Bool {
        guard key.count == 16, nonce.count == 13, out.count >= ciphertext.count, let k = key.baseAddress,
              let n = nonce.baseAddress, let m = mic.baseAddress else { return false }
        // The C side reads the tag through a mutable pointer it only writes when encrypting.
        return hcigatt_aes_ccm(0, k.assumingMemoryBound(to: UInt8.self), n.assumingMemoryBound(to: UInt8.self),
                               associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), associatedData.count,
                               ciphertext.baseAddress?.assumingMemoryBound(to: UInt8.self), ciphertext.count,
                               out.baseAddress?.assumingMemoryBound(to: UInt8.self),
                               UnsafeMutablePointer(mutating: m.assumingMemoryBound(to: UInt8.self)), mic.count) == 1
    }

    /// AES-128-CCM encryption: `plaintext` into `out` (at least as long) and the M-byte tag
    /// into `mic` (`mic.count` bytes). False when an argument is out of range.
    public static func aesCCMEncrypt(key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
                                     associatedData: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                                     plaintext: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer,
                                     mic: UnsafeMutableRawBufferPointer) -> Bool {
        guard key.count == 16, nonce.count == 13, out.count >= plaintext.count, let k = key.baseAddress,
              let n = nonce.baseAddress, let m = mic.baseAddress else { return false }
        return hcigatt_aes_ccm(1, k.assumingMemoryBound(to: UInt8.self), n.assumingMemoryBound(to: UInt8.self),
                               associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), associatedData.count,
                               plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), plaintext.count,
                               out.baseAddress?.assumingMemoryBound(to: UInt8.self),
                               m.assumingMemoryBound(to: UInt8.self), mic.count) == 1
    }
}

/// An AES-128 key with its schedule expanded once, for many blocks under one key (an IRK
/// checked against every new resolvable private address). Immutable after `init` (BearSSL
/// only reads the context), so it is shared freely; the schedule is wiped on deinit.
public final class AES128Key: @unchecked Sendable {
    private let context: UnsafeMutablePointer<hcigatt_aes_key>

    /// The key, most significant byte first (as ``BluetoothCrypto/aes128(key:block:)``).
    public init(_ key: UInt128) {
        context = UnsafeMutableRawPointer.allocate(byteCount: hcigatt_aes_key_size(), alignment: 16)
            .bindMemory(to: hcigatt_aes_key.self, capacity: 1)
        // Most significant byte first in memory: each half big-endian, the high half first.
        var bytes = (UInt64(truncatingIfNeeded: key >> 64).bigEndian, UInt64(truncatingIfNeeded: key).bigEndian)
        withUnsafeBytes(of: &bytes) { k in
            hcigatt_aes_key_init(context, k.baseAddress?.assumingMemoryBound(to: UInt8.self))
        }
        explicitBzero(&bytes)
    }

    deinit {
        explicit_bzero(context, hcigatt_aes_key_size())
        context.deallocate()
    }

    /// E(key, block): the 16 bytes at `block` (most significant first) into `out`.
    public func encrypt(_ block: UnsafeRawPointer, into out: UnsafeMutableRawPointer) {
        hcigatt_aes_key_encrypt(context, block.assumingMemoryBound(to: UInt8.self), out.assumingMemoryBound(to: UInt8.self))
    }
}

private func explicitBzero(_ value: inout (UInt64, UInt64)) {
    withUnsafeMutableBytes(of: &value) { if let p = $0.baseAddress { explicit_bzero(p, $0.count) } }
}
