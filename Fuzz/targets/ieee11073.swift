// Fuzz target: IEEE 11073 SFLOAT / FLOAT and Date Time parsing, description and
// re-encoding. Built with the BluetoothWire sources by Fuzz/run.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let buf = UnsafeRawBufferPointer(start: data, count: size)
    var r = ByteReader(buf)
    while r.remaining >= 2 {
        do throws(WireError) {
            let s = try SFloat.read(&r)
            precondition(!s.description.isEmpty)
            _ = s.doubleValue
            if case .finite(let m, let e) = s.kind {
                let back = try SFloat(mantissa: Int(m), exponent: Int(e))
                precondition(back == s)
                precondition(s.value != nil)
            } else {
                precondition(s.value == nil)
            }
        } catch {
            preconditionFailure("SFLOAT read or re-encode failed: \(error)")
        }
    }
    r = ByteReader(buf)
    while r.remaining >= 4 {
        do throws(WireError) {
            let f = try MedFloat32.read(&r)
            precondition(!f.description.isEmpty)
            _ = f.doubleValue
            if case .finite(let m, let e) = f.kind {
                let back = try MedFloat32(mantissa: Int(m), exponent: Int(e))
                precondition(back == f)
                if let v = f.value { precondition(v.isFinite) }
            }
        } catch {
            preconditionFailure("FLOAT read or re-encode failed: \(error)")
        }
    }
    do throws(WireError) {
        let d = try DateTime(wire: buf)
        _ = d.description
        _ = d.fields
        let bytes = try d.encoded()
        precondition(Array(buf) == bytes)
    } catch {
        precondition(error.code != .valueOutOfRange)
    }
    return 0
}
