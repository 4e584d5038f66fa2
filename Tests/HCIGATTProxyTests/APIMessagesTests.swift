import Testing
@testable import HCIGATTProxy

@Suite struct APIMessagesTests {
    @Test("Raw advertisements: each element's length prefix is its real size, every field read back")
    func rawAdvertisements() throws {
        let ads = [APIRawAdvertisement(address: 0xAABBCCDDEEFF, rssi: -70, addressType: 1, data: [2, 1, 6, 3, 3, 0x0F, 0x18]),
                   APIRawAdvertisement(address: 0, rssi: 0, addressType: 0, data: []),
                   APIRawAdvertisement(address: 1, rssi: 127, addressType: 3, data: [UInt8](repeating: 0x55, count: 251))]
        let m = APIResponse.rawAdvertisements(ads).message(clientMinor: 14)
        #expect(m.type == 93)
        var r = ProtoReader(m.payload)
        var back: [APIRawAdvertisement] = []
        while let (f, v) = try r.next() {
            #expect(f == 1)
            var inner = ProtoReader(m.payload, range: try r.range(v, f))
            var a = APIRawAdvertisement(address: 99, rssi: 0, addressType: 0, data: [])
            while let (g, x) = try inner.next() {
                switch g {
                case 1: a.address = try inner.uint(x, g)
                case 2: a.rssi = Int8(try inner.sint32(x, g))
                case 3: a.addressType = UInt8(try inner.uint32(x, g))
                case 4: a.data = try inner.data(x, g)
                default: Issue.record("field \(g)")
                }
            }
            back.append(a)
        }
        #expect(back == ads)
    }

    @Test("GATT UUIDs: 16-bit ones as short_uuid for API 1.12 and later, else the two words ESPHome writes")
    func uuids() {
        let battery = APIUUID(high: 0x0000_180F_0000_1000, low: 0x8000_0080_5F9B_34FB)
        #expect(battery.short == 0x180F)
        #expect(battery.words == [0x0000180F00001000, 0x800000805F9B34FB])
        #expect(APIUUID(high: 0x0000_0000_0000_1000, low: 0x8000_0080_5F9B_34FB).short == nil, "0 would read as no UUID")
        let custom = APIUUID(high: 0x0001_0203_0405_0607, low: 0x0809_0A0B_0C0D_0E0F)
        #expect(custom.short == nil)
        var w = ProtoWriter()
        battery.write(&w, words: 1, short: 4, shortAllowed: true)
        #expect(w.bytes == [0x20, 0x8F, 0x30])
        var old = ProtoWriter()
        battery.write(&old, words: 1, short: 4, shortAllowed: false)
        #expect(old.bytes.first == 0x08 && old.bytes.filter { $0 == 0x08 }.count >= 2, "two unpacked words")
    }

    @Test("Base64: keys round trip; bad lengths, characters and padding bits are refused")
    func base64() {
        for n in 0 ..< 40 {
            let bytes = (0 ..< n).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            #expect(Base64.decode(Base64.encode(bytes)) == bytes)
        }
        #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(Base64.encode(Array("fo".utf8)) == "Zm8=")
        #expect(Base64.decode("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=") == (0 ..< 32).map { UInt8($0) })
        #expect(Base64.decode("Zm9") == nil)
        #expect(Base64.decode("Zm9v!mFy") == nil)
        #expect(Base64.decode("Zm9=") == nil, "padding bits not zero")
        #expect(Base64.decode("Z===") == nil)
    }
}
