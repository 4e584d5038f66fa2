import CBearSSL

/// The primitives of the Home Assistant proxy's encrypted transport
/// (`Noise_NNpsk0_25519_ChaChaPoly_SHA256`) on BearSSL: X25519 (RFC 7748), ChaCha20-Poly1305
/// (RFC 8439), SHA-256 and HMAC-SHA256. Byte order is each algorithm's own (X25519 keys
/// little-endian as RFC 7748 writes them).
extension BluetoothCrypto {
    /// X25519(`scalar`, `point`); nil when the result is all zero (a small-order point,
    /// which Noise requires the handshake to refuse).
    public static func x25519(scalar: [UInt8], point: [UInt8]) -> [UInt8]? {
        guard scalar.count == 32, point.count == 32 else { return nil }
        var out = [UInt8](repeating: 0, count: 32)
        let ok = scalar.withUnsafeBufferPointer { k in
            point.withUnsafeBufferPointer { p in
                out.withUnsafeMutableBufferPointer { hcigatt_x25519(k.baseAddress, p.baseAddress, $0.baseAddress) }
            }
        }
        return ok == 1 ? out : nil
    }

    /// The X25519 public key of a private `scalar`.
    public static func x25519PublicKey(_ scalar: [UInt8]) -> [UInt8]? {
        guard scalar.count == 32 else { return nil }
        var out = [UInt8](repeating: 0, count: 32)
        let ok = scalar.withUnsafeBufferPointer { k in out.withUnsafeMutableBufferPointer { hcigatt_x25519_base(k.baseAddress, $0.baseAddress) } }
        return ok == 1 ? out : nil
    }

    /// ChaCha20-Poly1305 encryption: the ciphertext followed by its 16-byte tag.
    public static func chaChaPolySeal(key: [UInt8], nonce: [UInt8], associatedData: [UInt8] = [], plaintext: [UInt8]) -> [UInt8] {
        precondition(key.count == 32 && nonce.count == 12, "ChaCha20-Poly1305 needs a 32-byte key and a 12-byte nonce")
        var out = plaintext + [UInt8](repeating: 0, count: 16)
        let n = plaintext.count
        key.withUnsafeBufferPointer { k in
            nonce.withUnsafeBufferPointer { iv in
                associatedData.withUnsafeBufferPointer { ad in
                    out.withUnsafeMutableBufferPointer { o in
                        _ = hcigatt_chachapoly(1, k.baseAddress, iv.baseAddress, ad.baseAddress, ad.count, o.baseAddress, n, o.baseAddress! + n)
                    }
                }
            }
        }
        return out
    }

    /// ChaCha20-Poly1305 decryption of ciphertext-and-tag; nil when shorter than a tag or
    /// when the tag does not match (wrong key, changed bytes).
    public static func chaChaPolyOpen(key: [UInt8], nonce: [UInt8], associatedData: [UInt8] = [], sealed: [UInt8]) -> [UInt8]? {
        precondition(key.count == 32 && nonce.count == 12, "ChaCha20-Poly1305 needs a 32-byte key and a 12-byte nonce")
        guard sealed.count >= 16 else { return nil }
        let n = sealed.count - 16
        var data = Array(sealed[..<n])
        var tag = Array(sealed[n...])
        let ok = key.withUnsafeBufferPointer { k in
            nonce.withUnsafeBufferPointer { iv in
                associatedData.withUnsafeBufferPointer { ad in
                    data.withUnsafeMutableBufferPointer { d in
                        tag.withUnsafeMutableBufferPointer { t in
                            hcigatt_chachapoly(0, k.baseAddress, iv.baseAddress, ad.baseAddress, ad.count, d.baseAddress, n, t.baseAddress)
                        }
                    }
                }
            }
        }
        return ok == 1 ? data : nil
    }

    /// SHA-256 of `data`.
    public static func sha256(_ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        data.withUnsafeBufferPointer { d in out.withUnsafeMutableBufferPointer { hcigatt_sha256(d.baseAddress, d.count, $0.baseAddress) } }
        return out
    }

    /// HMAC-SHA256 (RFC 2104) of `data` under `key`.
    public static func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        key.withUnsafeBufferPointer { k in
            data.withUnsafeBufferPointer { d in
                out.withUnsafeMutableBufferPointer { hcigatt_hmac_sha256(k.baseAddress, k.count, d.baseAddress, d.count, $0.baseAddress) }
            }
        }
        return out
    }

    /// Fresh bytes from the system's cryptographically secure source (getrandom).
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        return (0 ..< count).map { _ in UInt8.random(in: 0 ... 255, using: &g) }
    }
}
