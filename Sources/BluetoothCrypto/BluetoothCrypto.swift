import CCrypto

/// The cryptographic building blocks of the host (AES-128 and AES-CMAC) on OpenSSL's
/// libcrypto: the cipher is OpenSSL's AES; CMAC is the RFC 4493 mode around it (see
/// `CCrypto/shim.h` for why not EVP). Controllers are not asked (Bumble's virtual
/// controller, like some real ones, has no LE Encrypt).
///
/// Byte order: keys, blocks and results are in the byte order of the algorithm (RFC 4493,
/// FIPS-197: first byte = most significant). The Bluetooth functions built on them say
/// where the specification sends values least significant octet first.
public enum BluetoothCrypto {
    /// libcrypto failed (out of memory, no AES in the linked provider).
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The libcrypto call that failed.
        public var operation: String
        public var description: String { "libcrypto: \(operation) failed" }
    }

    /// AES-CMAC (RFC 4493) of `message` under the 128-bit `key`.
    public static func aesCMAC(key: [UInt8], message: UnsafeRawBufferPointer) throws(Failure) -> [UInt8] {
        precondition(key.count == 16, "AES-CMAC needs a 16-byte key")
        var out = [UInt8](repeating: 0, count: 16)
        let ok = key.withUnsafeBufferPointer { k in
            out.withUnsafeMutableBufferPointer { o in
                hcigatt_aes_cmac(k.baseAddress, message.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                 message.count, o.baseAddress)
            }
        }
        guard ok == 1 else { throw Failure(operation: "AES-CMAC") }
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
        let ok = key.withUnsafeBufferPointer { k in
            block.withUnsafeBufferPointer { b in
                out.withUnsafeMutableBufferPointer { o in hcigatt_aes128_encrypt(k.baseAddress, b.baseAddress, o.baseAddress) }
            }
        }
        guard ok == 1 else { throw Failure(operation: "AES-128") }
        return out
    }
}
