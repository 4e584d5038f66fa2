import Testing
@testable import BluetoothWire

/// The generated assigned-numbers tables (Data/assigned-numbers, scripts/gen-assigned-numbers).
/// That the generated file matches the data is checked by `scripts/gen-assigned-numbers --check`.
@Suite struct AssignedNumbersTests {
    @Test func knownUUIDs() {
        #expect(AssignedNumbers.serviceName(BluetoothUUID(0x180D)) == "Heart Rate")
        #expect(AssignedNumbers.serviceName(BluetoothUUID(0x180F)) == "Battery")
        #expect(AssignedNumbers.serviceName(BluetoothUUID(0x1809)) == "Health Thermometer")
        #expect(AssignedNumbers.serviceName(BluetoothUUID(0x1810)) == "Blood Pressure")
        #expect(AssignedNumbers.serviceName(BluetoothUUID(0x1800)) == "GAP")
        #expect(AssignedNumbers.characteristicName(BluetoothUUID(0x2A37)) == "Heart Rate Measurement")
        #expect(AssignedNumbers.characteristicName(BluetoothUUID(0x2A00)) == "Device Name")
        #expect(AssignedNumbers.characteristicName(BluetoothUUID(0x2B8C)) == "CO2 Concentration")
        #expect(AssignedNumbers.descriptorName(BluetoothUUID(0x2902)) == "Client Characteristic Configuration")
        #expect(AssignedNumbers.descriptorName(BluetoothUUID(0x2900)) == "Characteristic Extended Properties")
        #expect(AssignedNumbers.uuidName(BluetoothUUID(0x2800)) == "Primary Service")
        #expect(AssignedNumbers.uuidName(BluetoothUUID(0x2803)) == "Characteristic")
        #expect(AssignedNumbers.uuidName(BluetoothUUID(0xFEAA)) == "Google LLC")
        #expect(AssignedNumbers.uuidName(BluetoothUUID(0xFD6F)) == "Apple, Inc.")
        #expect(AssignedNumbers.uuidName(BluetoothUUID(0xFFFD)) == "Universal Second Factor Authenticator")
        #expect(AssignedNumbers.uuidName(BluetoothUUID(0x2700)) == "unitless")
        #expect(AssignedNumbers.uuidName(BluetoothUUID(0x180D)) == "Heart Rate")
        #expect(AssignedNumbers.uuidName(BluetoothUUID(0x2A37)) == "Heart Rate Measurement")
        #expect(AssignedNumbers.uuidName(BluetoothUUID(0x2902)) == "Client Characteristic Configuration")
        // The 16-bit form parsed from text or wire is the same UUID.
        #expect(AssignedNumbers.serviceName(BluetoothUUID("0000180D-0000-1000-8000-00805F9B34FB")!) == "Heart Rate")
    }

    @Test func tablesAreKeptApart() {
        #expect(AssignedNumbers.serviceName(BluetoothUUID(0x2A37)) == nil)
        #expect(AssignedNumbers.characteristicName(BluetoothUUID(0x180D)) == nil)
        #expect(AssignedNumbers.descriptorName(BluetoothUUID(0x2800)) == nil)
    }

    @Test func unknownIsNil() {
        #expect(AssignedNumbers.serviceName(BluetoothUUID(0x1817)) == nil)   // unassigned
        #expect(AssignedNumbers.uuidName(BluetoothUUID(0x0000)) == nil)
        #expect(AssignedNumbers.uuidName(BluetoothUUID(0xFFFF)) == nil)
        #expect(AssignedNumbers.uuidName(BluetoothUUID(0x3000)) == nil)
        // 32-bit alias with no 16-bit form.
        #expect(AssignedNumbers.uuidName(BluetoothUUID(uuid32: 0x0001_180D)) == nil)
        // 128-bit, not the Base UUID (Nordic UART service).
        let nus = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
        #expect(AssignedNumbers.serviceName(nus) == nil)
        #expect(AssignedNumbers.uuidName(nus) == nil)
        // Base-like low half but a different high half, and vice versa.
        #expect(AssignedNumbers.uuidName(BluetoothUUID(high: 0x0000_180D_0000_1001, low: BluetoothUUID.baseLow)) == nil)
        #expect(AssignedNumbers.uuidName(BluetoothUUID(high: 0x0000_180D_0000_1000, low: 0)) == nil)
    }

    @Test func companies() {
        #expect(AssignedNumbers.companyName(0x004C) == "Apple, Inc.")
        #expect(AssignedNumbers.companyName(0x000D) == "Texas Instruments Inc.")
        #expect(AssignedNumbers.companyName(0x0059) == "Nordic Semiconductor ASA")
        #expect(AssignedNumbers.companyName(0x0000) == "Ericsson AB")
        #expect(AssignedNumbers.companyName(0x0006) == "Microsoft")
        #expect(AssignedNumbers.companyName(0x00E0) == "Google")
        #expect(AssignedNumbers.companyName(0x0225) == "Nestlé Nespresso S.A.")   // non-ASCII
        #expect(AssignedNumbers.companyName(0x09BD) == "Centre Suisse d'Electronique et de Microtechnique SA")
        #expect(AssignedNumbers.companyName(0xFFFE) == nil)
        #expect(AssignedNumbers.companyName(0xFFFF) == "test / no company")
        // The AD code's table is the generated one.
        #expect(CompanyIdentifier.name(CompanyIdentifier.apple) == "Apple, Inc.")
        #expect(CompanyIdentifier.name(0x000D) == "Texas Instruments Inc.")
        #expect(CompanyIdentifier.name(0xFFFE) == nil)
    }

    @Test func appearance() {
        #expect(AssignedNumbers.appearanceName(0x0341) == "Heart Rate Belt")
        #expect(AssignedNumbers.appearanceName(0x0340) == "Heart Rate Sensor")
        #expect(AssignedNumbers.appearanceName(0x0345) == "Heart Rate Sensor")   // unassigned subcategory
        #expect(AssignedNumbers.appearanceName(0x0301) == "Ear Thermometer")
        #expect(AssignedNumbers.appearanceName(0x0000) == "Unknown")
        #expect(AssignedNumbers.appearanceName(0xFFC1) == nil)
        #expect(AssignedNumbers.appearanceCategoryName(13) == "Heart Rate Sensor")
        #expect(AssignedNumbers.appearanceCategoryName(0x400) == nil)
        #expect(AssignedNumbers.appearanceSubcategoryName(0x0340) == nil)
        #expect(AssignedNumbers.appearanceSubcategoryName(0x0341) == "Heart Rate Belt")
        let a = Appearance(rawValue: 0x0341)
        #expect(a.categoryName == "Heart Rate Sensor" && a.subcategoryName == "Heart Rate Belt")
        #expect(Appearance(rawValue: 0x0C40).categoryName == "Pulse Oximeter")   // category 49
        #expect(Appearance(rawValue: 0x0B00).categoryName == nil)               // category 44: unassigned
    }

    /// Every table is sorted by key with no duplicates, every name non-empty valid UTF-8, and a
    /// lookup of every key finds its own entry (so the index offsets line up with the names).
    @Test func tablesAreConsistent() {
        for table in AssignedNumbers.Table.allCases {
            let n = AssignedNumbers.count(table)
            #expect(n > 0, "\(table)")
            var previous = -1
            for i in 0 ..< n {
                guard let (key, name) = AssignedNumbers.entry(table, at: i) else {
                    Issue.record("\(table) entry \(i) missing"); break
                }
                #expect(Int(key) > previous, "\(table) not sorted at \(i)")
                previous = Int(key)
                #expect(!name.utf8.isEmpty, "\(table) \(key)")
                #expect(String(validating: name.utf8, as: UTF8.self) != nil, "\(table) \(key)")
                #expect(AssignedNumbers.lookup(key, in: table)?.utf8.baseAddress == name.utf8.baseAddress)
            }
            #expect(AssignedNumbers.entry(table, at: n) == nil)
            #expect(AssignedNumbers.entry(table, at: -1) == nil)
        }
    }

    @Test func tableSizes() {
        // The complete SIG lists (Data/assigned-numbers/README.md), not a hand-picked subset.
        #expect(AssignedNumbers.count(.services) >= 70)
        #expect(AssignedNumbers.count(.characteristics) >= 500)
        #expect(AssignedNumbers.count(.descriptors) >= 19)
        #expect(AssignedNumbers.count(.declarations) == 4)
        #expect(AssignedNumbers.count(.memberServices) >= 600)
        #expect(AssignedNumbers.count(.companies) >= 4000)
        #expect(AssignedNumbers.count(.appearances) >= 300)
    }

    @Test func nameComparesWithoutString() {
        let n = AssignedNumbers.lookup(0x180D, in: .services)
        #expect(n.map { $0 == "Heart Rate" } == true)
        #expect(n.map { $0 == "Heart Rat" } == false)
        #expect(n?.description == "Heart Rate")
    }
}
