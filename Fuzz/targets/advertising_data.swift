// Fuzz target: advertising data iteration, typed values, beacons, summary, descriptions,
// and re-encoding what parsed. Built with the BluetoothWire sources by Fuzz/run.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let buf = UnsafeRawBufferPointer(start: data, count: size)
    let ad = AdvertisingData(buf)
    var owned: [ADStructureValue] = []
    var it = ad.makeIterator()
    var layoutError: WireError?
    while true {
        do throws(WireError) {
            guard let s = try it.next() else { break }
            precondition(s.data.count <= 254)
            owned.append(s.owned)
            do throws(WireError) {
                switch try s.value() {
                case .manufacturerData(let m): _ = m.iBeacon
                case .serviceData(let d): _ = try d.eddystone()
                case .serviceUUIDs(let l), .serviceSolicitation(let l):
                    var n = 0
                    for _ in l { n += 1 }
                    precondition(n == l.count)
                case .targetAddresses(let l):
                    var n = 0
                    for _ in l { n += 1 }
                    precondition(n == l.count)
                default: break
                }
            } catch {}
        } catch {
            layoutError = error
            break
        }
    }
    // The summary fails exactly when the layout or a summarised value is malformed.
    var summaryOK = true
    do throws(WireError) { _ = try ad.summary() } catch { summaryOK = false }
    if layoutError != nil { precondition(!summaryOK) }
    _ = ad.fields

    // Re-encode the structures that parsed and parse them back: same structures.
    let builder = AdvertisingDataBuilder(maximumLength: AdvertisingData.extendedMaximumLength, owned)
    if builder.encodedLength <= AdvertisingData.extendedMaximumLength {
        do throws(WireError) {
            let bytes = try builder.encoded()
            precondition(bytes.count == builder.encodedLength)
            // Without errors or padding the bytes are the input's prefix.
            precondition(Array(buf.prefix(bytes.count)) == bytes)
            let back = bytes.withUnsafeBytes { b -> [ADStructureValue]? in
                var it = AdvertisingData(b).makeIterator()
                var out: [ADStructureValue] = []
                do throws(WireError) {
                    while let s = try it.next() { out.append(s.owned) }
                } catch { return nil }
                return out
            }
            precondition(back == owned)
        } catch {
            preconditionFailure("re-encoding parsed structures failed: \(error)")
        }
    }
    return 0
}
