print("hcigatt")
