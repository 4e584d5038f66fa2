import BluetoothCrypto
import Testing
@testable import HCIGATTProxy

func hex(_ s: String) -> [UInt8] {
    let digits = Array(s.utf8.filter { $0 != 0x20 })
    return stride(from: 0, to: digits.count - 1, by: 2).map { UInt8(String(decoding: digits[$0 ... $0 + 1], as: UTF8.self), radix: 16)! }
}

/// NNpsk0 as the ESPHome native API runs it, on vectors computed by independent
/// implementations: the `noiseprotocol` package (the one aioesphomeapi uses) as the
/// initiator with fixed ephemeral keys, and aioesphomeapi's own handshake code.
@Suite struct NoiseTests {
    static let prologue = Array("NoiseAPIInit".utf8) + [0, 0]
    static let psk = (0 ..< 32).map { UInt8($0) }

    @Test("The responder answers noiseprotocol's message 1 byte for byte, and the transport keys agree")
    func noiseprotocolVector() throws {
        // noiseprotocol 0.3.1: initiator ephemeral 11…11, responder ephemeral 22…22.
        let m1 = hex("7b4e909bbe7ffe44c465a220037d608ee35897d31ef972f07f74892cb0f73f13d1bc1a38b6793685dc7e2ffdf8ea0933")
        let done = try NoiseResponder.respond(to: m1, psk: Self.psk, prologue: Self.prologue,
                                              ephemeral: [UInt8](repeating: 0x22, count: 32)).get()
        #expect(done.reply == hex("0faa684ed28867b97f4a6a2dee5df8ce974e76b7018e3f22a1c4cf2678570f207336b95933b321b1ae86673f689f5c9f"))
        var receive = done.receive, send = done.send
        #expect(receive.open(hex("082a88d4457b72646ca1ef304be34f8ffac1f659")) == [0, 7, 0, 0])
        #expect(send.seal([0, 8, 0, 0]) == hex("d9423bf48bdea62bb10bbd87a7fb5ecc26721050"))
    }

    @Test("A second vector checked against aioesphomeapi: the client's HelloRequest and our HelloResponse and Ping")
    func aioesphomeapiVector() throws {
        let m1 = hex("358072d6365880d1aeea329adf9121383851ed21a28e3b75e965d0d2cd1662548b18e980a5463f4f4ed6a227d01eebb1")
        let ours = (0x40 ... 0x5F).map { UInt8($0) }
        let done = try NoiseResponder.respond(to: m1, psk: Self.psk, prologue: Self.prologue, ephemeral: ours).get()
        #expect(done.reply == hex("79a631eede1bf9c98f12032cdeadd0e7a079398fc786b88cc846ec89af85a51a08d629a47626962aacde23c4ab9801ba"))
        var receive = done.receive, send = done.send
        #expect(receive.open(hex("afbce0a526e7c549bf898458c65d4bf371e8a80f4ca0a0c54f47064c1b08")) == hex("0001000a0a04746573741001180a"))
        #expect(send.seal(hex("000200100801100a1a017822076d7970726f7879")) == hex("8500851cea6779f0bc417b6c33946cf09fc4db0916539fec8457afe9010dd1bd854e34a7"))
        #expect(send.seal(hex("00070000")) == hex("d5d88e680a53a2f0875b94e6ff7f38c720347a4c"))
    }

    @Test("Another key, a changed byte, another prologue, a short message: refused as such")
    func refusals() {
        let m1 = hex("358072d6365880d1aeea329adf9121383851ed21a28e3b75e965d0d2cd1662548b18e980a5463f4f4ed6a227d01eebb1")
        let e = BluetoothCrypto.randomBytes(32)
        func outcome(_ m: [UInt8], psk: [UInt8] = Self.psk, prologue: [UInt8] = Self.prologue) -> NoiseHandshakeError? {
            if case .failure(let f) = NoiseResponder.respond(to: m, psk: psk, prologue: prologue, ephemeral: e) { return f }
            return nil
        }
        #expect(outcome(m1, psk: (1 ... 32).map { UInt8($0) }) == .macFailure)
        #expect(outcome(m1, prologue: Array("NoiseAPIInit".utf8) + [0, 1, 7]) == .macFailure)
        var flipped = m1
        flipped[40] ^= 1
        #expect(outcome(flipped) == .macFailure)
        #expect(outcome(Array(m1.prefix(47))) == .badLength(47))
        #expect(outcome(m1) == nil)
    }

    @Test("A transport cipher: a frame that fails its tag does not use up the nonce")
    func transportNonces() {
        var a = NoiseCipher(key: BluetoothCrypto.randomBytes(32))
        var b = a
        let first = a.seal([1, 2, 3])!
        let second = a.seal([4])!
        #expect(b.open(second) == nil, "nonce 1 data at nonce 0")
        #expect(b.nonce == 0)
        #expect(b.open(first) == [1, 2, 3])
        #expect(b.open(second) == [4])
    }
}
