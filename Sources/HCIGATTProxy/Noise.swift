// The Noise Protocol Framework (revision 34) as the ESPHome native API uses it:
// Noise_NNpsk0_25519_ChaChaPoly_SHA256, we the responder. Two messages:
//   -> psk, e        (the client's ephemeral key, an encrypted empty payload)
//   <- e, ee         (ours, an encrypted empty payload)
// then Split(): the first cipher reads what the client sends, the second encrypts ours.
// Pure: the ephemeral key is an argument, so the handshake is tested on fixed keys.
import BluetoothCrypto

/// A CipherState of the transport phase (Noise §5.1): ChaCha20-Poly1305 with the nonce
/// 32 zero bits then the 64-bit counter little-endian.
struct NoiseCipher: Sendable {
    let key: [UInt8]
    /// The next nonce.
    private(set) var nonce: UInt64 = 0

    init(key: [UInt8]) { self.key = key }

    static func nonceBytes(_ n: UInt64) -> [UInt8] {
        [0, 0, 0, 0] + (0 ..< 8).map { UInt8(truncatingIfNeeded: n >> (8 * UInt64($0))) }
    }

    /// Encrypts with the next nonce. Nil once the nonces are spent (2⁶⁴−1: Noise §5.1).
    mutating func seal(_ plaintext: [UInt8], associatedData: [UInt8] = []) -> [UInt8]? {
        guard nonce < .max else { return nil }
        defer { nonce += 1 }
        return BluetoothCrypto.chaChaPolySeal(key: key, nonce: Self.nonceBytes(nonce), associatedData: associatedData, plaintext: plaintext)
    }

    /// Decrypts with the next nonce; nil (the nonce not used up) when the tag fails.
    mutating func open(_ sealed: [UInt8], associatedData: [UInt8] = []) -> [UInt8]? {
        guard nonce < .max,
              let plain = BluetoothCrypto.chaChaPolyOpen(key: key, nonce: Self.nonceBytes(nonce), associatedData: associatedData, sealed: sealed)
        else { return nil }
        nonce += 1
        return plain
    }
}

/// Why a handshake failed.
enum NoiseHandshakeError: Error, Sendable, Equatable {
    /// The client's message is not 32 bytes of key and at least a tag.
    case badLength(Int)
    /// Its payload did not decrypt: another pre-shared key (or changed bytes).
    case macFailure
    /// Its ephemeral key is a small-order point.
    case badKey
}

/// The responder's side of NNpsk0 (Noise §7.4 NN with the psk0 modifier, §9).
struct NoiseResponder: Sendable {
    static let protocolName = "Noise_NNpsk0_25519_ChaChaPoly_SHA256"

    /// The symmetric state (§5.2): chaining key, handshake hash, and the cipher key once
    /// one is mixed in (with its nonce).
    var ck: [UInt8]
    var h: [UInt8]
    var k: [UInt8]?
    var n: UInt64 = 0

    /// `psk`: the 32-byte pre-shared key; `prologue`: what both sides mix in first.
    init(prologue: [UInt8]) {
        let name = Array(Self.protocolName.utf8)
        // A name longer than the hash is hashed; shorter would be zero-padded (§5.2).
        h = name.count <= 32 ? name + [UInt8](repeating: 0, count: 32 - name.count) : BluetoothCrypto.sha256(name)
        ck = h
        mixHash(prologue)
    }

    mutating func mixHash(_ data: [UInt8]) { h = BluetoothCrypto.sha256(h + data) }

    /// HKDF (§4.3) with the chaining key as salt: two or three 32-byte outputs.
    static func hkdf(_ chainingKey: [UInt8], _ input: [UInt8], outputs: Int) -> [[UInt8]] {
        let temp = BluetoothCrypto.hmacSHA256(key: chainingKey, data: input)
        var out: [[UInt8]] = []
        var previous: [UInt8] = []
        for i in 1 ... outputs {
            previous = BluetoothCrypto.hmacSHA256(key: temp, data: previous + [UInt8(i)])
            out.append(previous)
        }
        return out
    }

    mutating func mixKey(_ input: [UInt8]) {
        let o = Self.hkdf(ck, input, outputs: 2)
        ck = o[0]
        k = o[1]
        n = 0
    }

    mutating func mixKeyAndHash(_ input: [UInt8]) {
        let o = Self.hkdf(ck, input, outputs: 3)
        ck = o[0]
        mixHash(o[1])
        k = o[2]
        n = 0
    }

    mutating func encryptAndHash(_ plaintext: [UInt8]) -> [UInt8] {
        guard let key = k else {
            mixHash(plaintext)
            return plaintext
        }
        let c = BluetoothCrypto.chaChaPolySeal(key: key, nonce: NoiseCipher.nonceBytes(n), associatedData: h, plaintext: plaintext)
        n += 1
        mixHash(c)
        return c
    }

    mutating func decryptAndHash(_ ciphertext: [UInt8]) -> [UInt8]? {
        guard let key = k else {
            mixHash(ciphertext)
            return ciphertext
        }
        guard let p = BluetoothCrypto.chaChaPolyOpen(key: key, nonce: NoiseCipher.nonceBytes(n), associatedData: h, sealed: ciphertext) else { return nil }
        n += 1
        mixHash(ciphertext)
        return p
    }

    /// The handshake done: the reply to send, the cipher for what the client sends and the
    /// one for what we send.
    struct Established: Sendable {
        var reply: [UInt8]
        var receive: NoiseCipher
        var send: NoiseCipher
    }

    /// Reads the client's `-> psk, e` with `psk`, writes `<- e, ee` with our `ephemeral`
    /// private key, and splits.
    static func respond(to message: [UInt8], psk: [UInt8], prologue: [UInt8], ephemeral: [UInt8]) -> Result<Established, NoiseHandshakeError> {
        guard message.count >= 32 + 16 else { return .failure(.badLength(message.count)) }
        var s = NoiseResponder(prologue: prologue)
        // No pre-messages in NN. The psk token first (psk0).
        s.mixKeyAndHash(psk)
        let re = Array(message[..<32])
        s.mixHash(re)
        s.mixKey(re)  // with a psk, each e is also mixed into the key (§9.2)
        guard s.decryptAndHash(Array(message[32...])) != nil else { return .failure(.macFailure) }
        guard let e = BluetoothCrypto.x25519PublicKey(ephemeral) else { return .failure(.badKey) }
        s.mixHash(e)
        s.mixKey(e)
        guard let shared = BluetoothCrypto.x25519(scalar: ephemeral, point: re) else { return .failure(.badKey) }
        s.mixKey(shared)
        let reply = e + s.encryptAndHash([])
        let keys = hkdf(s.ck, [], outputs: 2)
        return .success(Established(reply: reply, receive: NoiseCipher(key: keys[0]), send: NoiseCipher(key: keys[1])))
    }
}
