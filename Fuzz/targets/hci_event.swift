// Fuzz target: HCI event parsing (Core Vol 4 Part E §7.7), report iteration, typed
// Command Complete return parameters, field descriptions, and exact re-encoding.
// Built together with the BluetoothWire sources as one module by Fuzz/run.

func fuzzReencode(_ event: HCIEvent, _ input: UnsafeRawBufferPointer) {
    var out = [UInt8](repeating: 0, count: 258)
    let n: Int
    do {
        n = try out.withUnsafeMutableBytes { o throws(WireError) -> Int in try event.encode(into: o) }
    } catch {
        preconditionFailure("a parsed event failed to re-encode: \(error)")
    }
    precondition(n == event.encodedLength, "encodedLength disagrees with encode")
    precondition(n == input.count && out[0..<n].elementsEqual(input), "re-encoding differs from the input")
}

func fuzzIterate(_ event: HCIEvent) {
    switch event {
    case .numberOfCompletedPackets(let e):
        var count = 0
        for _ in e { count += 1 }
        precondition(count == Int(e.numHandles))
    case .commandComplete(let cc):
        _ = cc.status
        // Typed decoding must throw or consume everything; re-encoding must give the same bytes.
        func check<T: HCICommandReturnParameters>(_ t: T.Type) {
            guard let v = try? cc.returnParameters(as: t) else { return }
            guard let again = try? v.encoded() else { preconditionFailure("typed return failed to encode") }
            precondition(again.elementsEqual(cc.returnParameters), "typed return re-encoding differs")
        }
        check(HCIStatusReturn.self)
        check(HCIConnectionHandleReturn.self)
        check(HCIReadLocalVersionInformationReturn.self)
        check(HCIReadLocalSupportedCommandsReturn.self)
        check(HCIReadLocalSupportedFeaturesReturn.self)
        check(HCIReadBufferSizeReturn.self)
        check(HCIReadBDADDRReturn.self)
        check(HCIReadRSSIReturn.self)
        check(LEReadBufferSizeV1Return.self)
        check(LEReadBufferSizeV2Return.self)
        check(LEReadLocalSupportedFeaturesReturn.self)
        check(LEReadMaximumDataLengthReturn.self)
        check(LEReadPHYReturn.self)
        check(LESetExtendedAdvertisingParametersReturn.self)
        check(LEReadMaximumAdvertisingDataLengthReturn.self)
        check(LEReadNumberOfSupportedAdvertisingSetsReturn.self)
        if let v = cc.decodedReturn.value {
            guard let again = try? v.encoded() else { preconditionFailure("decoded return failed to encode") }
            precondition(again.elementsEqual(cc.returnParameters), "decoded return re-encoding differs")
        }
    case .leMeta(.advertisingReport(let e)):
        var it = e.reports
        var count = 0
        do {
            while let r = try it.next() {
                precondition(r.data.count <= 31)
                count += 1
            }
        } catch { preconditionFailure("iterating a validated advertising report failed: \(error)") }
        precondition(count == Int(e.numReports))
        // Owned copy must encode to the same bytes.
        var owned: [LEAdvertisingReportEvent.Owned.Report] = []
        var it2 = e.reports
        while let r = try? it2.next() { owned.append(.init(r)) }
        guard let a = try? LEAdvertisingReportEvent.Owned(owned).encoded(), let b = try? e.encoded() else {
            preconditionFailure("advertising report failed to encode")
        }
        precondition(a == b)
    case .leMeta(.extendedAdvertisingReport(let e)):
        var it = e.reports
        var count = 0
        do {
            while try it.next() != nil { count += 1 }
        } catch { preconditionFailure("iterating a validated extended report failed: \(error)") }
        precondition(count == Int(e.numReports))
        var owned: [LEExtendedAdvertisingReportEvent.Owned.Report] = []
        var it2 = e.reports
        while let r = try? it2.next() { owned.append(.init(r)) }
        guard let a = try? LEExtendedAdvertisingReportEvent.Owned(owned).encoded(), let b = try? e.encoded() else {
            preconditionFailure("extended advertising report failed to encode")
        }
        precondition(a == b)
    case .leMeta(.directedAdvertisingReport(let e)):
        var it = e.reports
        var count = 0
        do {
            while try it.next() != nil { count += 1 }
        } catch { preconditionFailure("iterating a validated directed report failed: \(error)") }
        precondition(count == Int(e.numReports))
    default:
        break
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let buf = UnsafeRawBufferPointer(start: data, count: size)
    let event: HCIEvent
    do {
        event = try HCIEvent(parsing: buf)
    } catch {
        precondition(error.offset >= 0 && error.offset <= size, "error offset outside the input")
        // The advertising report shortcut fails alike (nil only for another event).
        do throws(WireError) {
            _ = try HCIEvent.advertisingReport(parsing: buf)
            precondition(!(size >= 3 && buf[0] == 0x3E && buf[2] == 0x02), "shortcut accepted what parsing refused: \(error)")
        } catch let e {
            precondition(e == error, "shortcut's error differs: \(e) vs \(error)")
        }
        return 0
    }
    // The advertising report shortcut finds exactly the LE Advertising Reports, the same ones.
    let shortcut: LEAdvertisingReportEvent?
    do throws(WireError) { shortcut = try HCIEvent.advertisingReport(parsing: buf) } catch {
        preconditionFailure("shortcut refused what parsing accepted: \(error)")
    }
    if case .leMeta(.advertisingReport(let e)) = event {
        precondition(shortcut?.numReports == e.numReports && shortcut?.reportsOffset == e.reportsOffset
                     && shortcut?.reportBytes.baseAddress == e.reportBytes.baseAddress
                     && shortcut?.reportBytes.count == e.reportBytes.count, "shortcut differs")
    } else {
        precondition(shortcut == nil, "shortcut found a report in another event")
    }
    fuzzIterate(event)
    _ = event.fieldTitle
    _ = event.fields
    fuzzReencode(event, buf)
    return 0
}
