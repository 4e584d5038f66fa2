import CBearSSL

/// Elliptic curve Diffie-Hellman on P-256 for LE Secure Connections (Core Vol 3 Part H
/// §2.3.5.6.1), on BearSSL's constant-time P-256 (`br_ec_p256_m31`): the host computes
/// keys itself (Bumble's
/// virtual controller, like some real ones, has no LE Read Local P-256 Public Key or LE
/// Generate DHKey). Coordinates and keys are 32 bytes, most significant first.
public enum P256 {
    /// A public key: the point (x, y).
    public struct PublicKey: Sendable, Hashable {
        /// The x coordinate, 32 bytes, most significant first.
        public var x: [UInt8]
        /// The y coordinate, 32 bytes, most significant first.
        public var y: [UInt8]
        /// A point as given (check it with `isValid` before use).
        public init(x: [UInt8], y: [UInt8]) {
            precondition(x.count == 32 && y.count == 32, "P-256 coordinates are 32 bytes")
            self.x = x
            self.y = y
        }

        /// A point of P-256: both coordinates below p, on the curve.
        public var isValid: Bool {
            x.withUnsafeBufferPointer { xs in y.withUnsafeBufferPointer { ys in hcigatt_p256_is_valid(xs.baseAddress, ys.baseAddress) == 1 } }
        }
    }

    /// Why a key cannot be used or made.
    public enum KeyError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The peer's public key is not a point of the curve (an invalid-curve attack or a
        /// corrupted PDU): refused, never used.
        case invalidPublicKey
        /// The private key is 0 or not below the group order.
        case invalidPrivateKey
        case failure(String)

        public var description: String {
            switch self {
            case .invalidPublicKey: "the public key is not a point of P-256"
            case .invalidPrivateKey: "the private key is outside 1...n-1"
            case .failure(let s): "P-256: \(s) failed"
            }
        }
    }

    /// A private key (the scalar d) with its public key.
    public struct PrivateKey: Sendable {
        /// The scalar d (keep it secret).
        public let rawValue: [UInt8]
        /// The public key d·G.
        public let publicKey: PublicKey

        /// A key from the given scalar (the specification's debug key, tests).
        public init(rawValue: [UInt8]) throws(KeyError) {
            precondition(rawValue.count == 32, "a P-256 private key is 32 bytes")
            var x = [UInt8](repeating: 0, count: 32), y = [UInt8](repeating: 0, count: 32)
            let ok = rawValue.withUnsafeBufferPointer { d in
                x.withUnsafeMutableBufferPointer { xo in
                    y.withUnsafeMutableBufferPointer { yo in hcigatt_p256_public_key(d.baseAddress, xo.baseAddress, yo.baseAddress) }
                }
            }
            guard ok == 1 else { throw .invalidPrivateKey }
            self.rawValue = rawValue
            self.publicKey = PublicKey(x: x, y: y)
        }

        /// A fresh key from the system's cryptographically secure random source (getrandom).
        public static func generate() throws(KeyError) -> PrivateKey {
            var g = SystemRandomNumberGenerator()
            // A random 256-bit value is below n (about 2^256 - 2^224) but for a 2^-32 chance.
            for _ in 0 ..< 16 {
                var d = [UInt8](repeating: 0, count: 32)
                for i in stride(from: 0, to: 32, by: 8) {
                    let v = g.next()
                    for j in 0 ..< 8 { d[i + j] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(j))) }
                }
                if let key = try? PrivateKey(rawValue: d) { return key }
            }
            throw .failure("P-256 key generation")
        }

        /// The DHKey with `peer`: the x coordinate of d·Q. A `peer` not on the curve is refused.
        public func sharedSecret(with peer: PublicKey) throws(KeyError) -> [UInt8] {
            guard peer.isValid else { throw .invalidPublicKey }
            var out = [UInt8](repeating: 0, count: 32)
            let ok = rawValue.withUnsafeBufferPointer { d in
                peer.x.withUnsafeBufferPointer { qx in
                    peer.y.withUnsafeBufferPointer { qy in
                        out.withUnsafeMutableBufferPointer { o in hcigatt_p256_ecdh(d.baseAddress, qx.baseAddress, qy.baseAddress, o.baseAddress) }
                    }
                }
            }
            guard ok == 1 else { throw .failure("P-256 ECDH") }
            return out
        }
    }
}
