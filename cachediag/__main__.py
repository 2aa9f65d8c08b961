from cachediag.entry import main

main()
