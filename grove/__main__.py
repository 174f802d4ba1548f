from grove.cli import main

main()
