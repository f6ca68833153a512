/** Side-effect stylesheet imports, which Vite bundles into a hashed `.css` file. */
declare module "*.css" {}
