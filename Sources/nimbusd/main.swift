print("nimbusd")
