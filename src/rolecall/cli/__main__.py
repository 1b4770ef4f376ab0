from rolecall.cli.app import main

main()
