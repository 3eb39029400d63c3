// placeholder so the module library exists until its code lands
