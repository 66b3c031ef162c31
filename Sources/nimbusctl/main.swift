print("nimbusctl")
